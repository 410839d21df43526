"""PDFs for a model without PDF input (issue 34): the engine sends their text (pypdf), cut at
200,000 characters with a note; an encrypted or unreadable PDF fails the turn naming the file and
the model; a model that takes PDFs gets the document untouched, and pypdf is never imported."""

from __future__ import annotations

import base64
import io
import subprocess
import sys

import pytest

from fastagent_cli.contract import DocumentRef, Prompt
from fastagent_cli.engine.documents import MAX_PDF_TEXT_CHARS
from fastagent_cli.engine.images import fit_prompt
from fastagent_cli.engine.turn import TurnFailure
from fastagent_cli.models.types import ModelInfo
from tests.fakes.pdf import minimal_pdf

TEXT_ONLY = ModelInfo("local", "m", "openai-completions")
CLAUDE = ModelInfo("anthropic", "claude", "anthropic-messages", input=("text", "image"))


def doc(data: bytes, name: str = "r.pdf") -> DocumentRef:
    return DocumentRef("application/pdf", base64.b64encode(data).decode(), name)


async def test_the_text_goes_for_a_model_without_pdf_input_cut_when_long() -> None:
    fitted = await fit_prompt(Prompt("sum", documents=(doc(minimal_pdf("one", "two")),)), TEXT_ONLY)
    assert fitted == Prompt('sum\n\n<file name="r.pdf">\none\n\ntwo\n</file>')
    pages = ["x" * 90 for _ in range(2300)]  # 207,000 characters of text
    fitted = await fit_prompt(Prompt("sum", documents=(doc(minimal_pdf(*pages)),)), TEXT_ONLY)
    assert fitted.text.endswith(
        f"\n[… the text goes on: only its first {MAX_PDF_TEXT_CHARS:,} characters are here]\n</file>"
    )
    assert MAX_PDF_TEXT_CHARS < len(fitted.text) < MAX_PDF_TEXT_CHARS + 200


async def test_an_encrypted_or_unreadable_pdf_fails_the_turn_saying_so() -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(TurnFailure, match=r"local/m does not take PDF input, so r\.pdf .* is encrypted"):
        await fit_prompt(Prompt("x", documents=(doc(out.getvalue()),)), TEXT_ONLY)
    with pytest.raises(TurnFailure, match=r"so bad\.pdf goes as its text, and it cannot be read as a PDF"):
        await fit_prompt(Prompt("x", documents=(doc(b"%PDF-1.4\ngarbage\n%%EOF", "bad.pdf"),)), TEXT_ONLY)


async def test_a_model_that_takes_pdfs_gets_the_document() -> None:
    prompt = Prompt("x", documents=(doc(minimal_pdf("one")),))
    assert await fit_prompt(prompt, CLAUDE) is prompt


def test_pypdf_is_imported_only_for_a_pdf_to_a_text_model() -> None:
    code = (
        "import sys, asyncio\n"
        "from fastagent_cli.engine import run_loop\n"
        "from fastagent_cli.assembly import attachments\n"
        "assert 'pypdf' not in sys.modules, 'pypdf imported at start'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
