"""A minimal valid PDF written by hand (one page, Helvetica text), for the PDF attachment tests:
``%PDF-1.4``, five objects, a cross-reference table with their byte offsets, ``%%EOF``."""

from __future__ import annotations


def minimal_pdf(*pages: str) -> bytes:
    """A PDF with one page per text (an empty text: a page with nothing to extract, as a scan)."""
    count = len(pages) or 1
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages or ("",)):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        content = f"BT /F1 18 Tf 20 100 Td ({escaped}) Tj ET".encode("latin-1") if text else b""
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents {5 + 2 * i} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


READER_MODEL = """
# The model says what documents it received: each one's name, size and text (read with pypdf).
import base64, io
from pypdf import PdfReader


def reply(request):
    last = [m for m in request.messages if m["role"] == "user"][-1]
    seen = []
    for block in last["content"]:
        if block["type"] == "document":
            data = base64.b64decode(block["data"])
            text = " / ".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages)
            seen.append(f"{block['name']} ({block['mimeType']}, {len(data)} bytes): {text}")
    images = sum(1 for block in last["content"] if block["type"] == "image")
    said = "; ".join(seen) or "no document"
    return f"read {said} and {images} images with " + request.last_user_text
"""
"""A scripted model (``scripted/reader:reply`` from a ``reader.py``) that answers what documents
the last user message carried, read back as PDFs."""
