"""PDFs for a model that takes none as documents: their text joins the prompt, as a text file's
does (``<file name="report.pdf">…</file>``), extracted with pypdf (imported only when a PDF goes
to such a model), page by page, at most :data:`MAX_PDF_TEXT_CHARS` characters of it.

A PDF with no text to extract (a scan), an encrypted one, or one pypdf cannot read fails the
turn saying so and naming the model, before any request: sending it on would only have the model
answer about a file it never saw.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging

from fastagent_cli.contract import DocumentRef, Prompt
from fastagent_cli.engine.turn import TurnFailure
from fastagent_cli.models.types import ModelInfo

__all__ = ["MAX_PDF_TEXT_CHARS", "pdf_text", "with_pdf_text"]

MAX_PDF_TEXT_CHARS = 200_000


def with_pdf_text(prompt: Prompt, model: ModelInfo) -> Prompt:
    """``prompt`` with its documents as text (call in a thread: parsing a PDF takes a while)."""
    texts = "".join(_file_block(doc, pdf_text(doc, model)) for doc in prompt.documents)
    return Prompt(prompt.text + texts, prompt.images, prompt.output_schema)


def pdf_text(document: DocumentRef, model: ModelInfo) -> str:
    """The text of a PDF, pages separated by blank lines (TurnFailure when there is none)."""
    try:
        data = base64.b64decode(document.data, validate=True)
    except (binascii.Error, ValueError):
        raise TurnFailure(f"the attached {document.name} is not valid base64") from None
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd files are not the user's
    how = f"{model.spec} does not take PDF input, so {document.name} goes as its text, and it"
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise TurnFailure(f"{how} is encrypted: decrypt it first, or switch to a model that takes PDFs")
        pages: list[str] = []
        size = 0
        for page in reader.pages:
            text = (page.extract_text() or "").strip()
            pages.append(text)
            size += len(text) + 2
            if size > MAX_PDF_TEXT_CHARS:
                break
    except TurnFailure:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise TurnFailure(f"{how} cannot be read as a PDF ({exc})") from None
    text = "\n\n".join(p for p in pages if p)
    if not text:
        raise TurnFailure(
            f"{how} has no text to extract (a scan?): switch to a model that takes PDFs "
            "(Anthropic's, OpenAI's; `fastagent models` lists them), or attach images of its pages"
        )
    if len(text) > MAX_PDF_TEXT_CHARS:
        cut = text[:MAX_PDF_TEXT_CHARS]
        return f"{cut}\n[… the text goes on: only its first {MAX_PDF_TEXT_CHARS:,} characters are here]"
    return text


def _file_block(document: DocumentRef, text: str) -> str:
    safe = document.name.replace('"', "'")
    return f'\n\n<file name="{safe}">\n{text}\n</file>'
