"""The OpenAI face's encoders and readers on their own: usage in OpenAI's terms, deltas that always
encode, the Responses items in the order the model produced them, content refusals."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from fastagent_cli.contract import (
    Completed,
    DocumentRef,
    Failed,
    ImageRef,
    Text,
    Thinking,
    ToolEnded,
    ToolStarted,
)
from fastagent_cli.serving.faces.openai.chat import ChunkEncoder
from fastagent_cli.serving.faces.openai.content import RequestError, read_content
from fastagent_cli.serving.faces.openai.conversation import ResponseIndex
from fastagent_cli.serving.faces.openai.responses import ResponseBuilder
from fastagent_cli.serving.faces.openai.turn import chat_usage, responses_usage
from tests.fakes.pdf import minimal_pdf

DATA = {"usage": {"input": 10, "output": 7, "cacheRead": 90, "cacheWrite": 5}, "stopReason": "stop"}


def sse_data(text: str) -> list[str]:
    return [m.removeprefix("data: ") for m in text.split("\n\n") if m]


def test_usage_counts_cached_input_as_openai_does() -> None:
    assert chat_usage(DATA) == {
        "prompt_tokens": 105,
        "completion_tokens": 7,
        "total_tokens": 112,
        "prompt_tokens_details": {"cached_tokens": 90},
    }
    assert responses_usage(DATA)["input_tokens"] == 105
    assert responses_usage(DATA)["input_tokens_details"] == {"cached_tokens": 90}
    assert chat_usage(None)["total_tokens"] == 0


def test_chunks_always_encode_and_tools_say_nothing() -> None:
    encode = ChunkEncoder("helper", include_usage=True)
    first = encode(Text("caf\u00e9 \ud800 end"))
    payload = json.loads(sse_data(first)[0])
    assert payload["choices"][0]["delta"] == {"role": "assistant", "content": "caf\u00e9 \ud800 end"}
    first.encode("utf-8")  # a lone surrogate is escaped, never an unencodable character
    assert payload["usage"] is None
    assert encode(ToolStarted("t1", "bash", {"command": "ls"})) == ""
    assert encode(ToolEnded("t1", False, [])) == ""
    assert json.loads(sse_data(encode(Thinking("hm")))[0])["choices"][0]["delta"] == {
        "reasoning_content": "hm"
    }
    tail = sse_data(encode(Completed({**DATA, "stopReason": "length"})))
    assert tail[-1] == "[DONE]"
    assert json.loads(tail[0])["choices"][0]["finish_reason"] == "length"
    assert json.loads(tail[1])["usage"]["completion_tokens"] == 7
    failed = sse_data(ChunkEncoder("helper", False)(Failed("model down", True, "model_error")))
    assert json.loads(failed[0]) == {
        "error": {"message": "model down", "type": "server_error", "param": None, "code": "model_error"}
    }


def test_an_answer_with_no_text_still_opens_with_the_role() -> None:
    encode = ChunkEncoder("helper", include_usage=False)
    out = sse_data(encode(Completed(DATA)))
    assert json.loads(out[0])["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert out[-1] == "[DONE]"


def test_response_items_follow_the_model() -> None:
    build = ResponseBuilder(
        "resp_1", "helper", instructions=None, previous_response_id=None, store=True, session="s"
    )
    text = "".join(
        build(event)
        for event in (
            Thinking("a"),
            Text("b"),
            ToolStarted("t", "bash", {}),
            Thinking("c"),
            Text("d"),
            Completed(DATA),
        )
    )
    events = [m for m in text.split("\n\n") if m]
    kinds = [m.split("\n")[0].removeprefix("event: ") for m in events]
    payloads = [json.loads(m.split("\n")[1].removeprefix("data: ")) for m in events]
    assert [p["type"] for p in payloads] == kinds
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    final = payloads[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message", "reasoning", "message"]
    assert [item["content"][0]["text"] for item in final["output"]] == ["a", "b", "c", "d"]
    assert final["status"] == "completed" and final["usage"]["output_tokens"] == 7
    assert kinds.count("response.output_item.added") == 4 == kinds.count("response.output_item.done")


def test_content_parts() -> None:
    content = read_content(
        [
            {"type": "text", "text": "a"},
            {"type": "image_url", "image_url": {"url": "data:image/JPEG;base64,AAAA"}},
        ],
        "messages[0].content",
    )
    assert (content.text, content.images) == ("a", (ImageRef("image/jpeg", "AAAA"),))
    with pytest.raises(RequestError, match="only data URLs"):
        read_content([{"type": "input_image", "image_url": "http://10.0.0.1/x.png"}], "input[0].content")
    with pytest.raises(RequestError, match=r"data:image/<type>;base64"):
        read_content([{"type": "image_url", "image_url": {"url": "data:text/plain;base64,AAAA"}}], "c")
    with pytest.raises(RequestError, match="'input_audio' is not supported"):
        read_content([{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}], "c")


PDF_B64 = base64.b64encode(minimal_pdf("Revenue rose")).decode()
PDF_URL = "data:application/pdf;base64," + PDF_B64


def test_pdf_file_parts_of_both_apis_are_documents() -> None:
    chat = read_content(
        [
            {"type": "text", "text": "sum up"},
            {"type": "file", "file": {"file_data": PDF_URL, "filename": "q3.pdf"}},
        ],
        "messages[0].content",
    )
    assert (chat.text, chat.documents) == ("sum up", (DocumentRef("application/pdf", PDF_B64, "q3.pdf"),))
    responses = read_content(
        [
            {"type": "input_file", "file_data": PDF_URL, "filename": "dir/q3.pdf"},
            {"type": "input_file", "file_data": PDF_URL},
        ],
        "input[0].content",
    )
    assert [d.name for d in responses.documents] == ["q3.pdf", "document-2.pdf"]
    assert responses.images == () and responses.text == ""


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"type": "file", "file": {"file_id": "file-abc"}}, r"messages\[0\]\.content\[0\]: files by file_id"),
        ({"type": "input_file", "file_url": "https://x/y.pdf"}, "no Files API and fetches no URLs"),
        ({"type": "file", "file": "q3.pdf"}, r"\.file must be an object"),
        ({"type": "file", "file": {"file_data": "data:text/plain;base64,AAAA"}}, "PDFs are the files"),
        (
            {"type": "input_file", "file_data": "data:application/pdf;base64,%%%"},
            r'content\[0\]\.file_data" is not valid base64',
        ),
        (
            {
                "type": "input_file",
                "file_data": "data:application/pdf;base64," + base64.b64encode(b"hello").decode(),
            },
            "is not a PDF",
        ),
        ({"type": "input_file", "file_data": PDF_URL, "filename": 7}, r"\.filename must be a string"),
        (
            {"type": "input_file", "file_data": PDF_URL, "filename": "a\nb.pdf"},
            r'content\[0\]\.filename" must be a file name',
        ),
    ],
)
def test_a_file_part_this_agent_cannot_take_is_a_400_naming_it(part: dict[str, object], message: str) -> None:
    with pytest.raises(RequestError, match=message) as refused:
        read_content([part], "messages[0].content")
    assert refused.value.param == "messages[0].content[0]"


def test_files_only_in_user_messages() -> None:
    part = {"type": "file", "file": {"file_data": PDF_URL}}
    with pytest.raises(RequestError, match="'file' is not supported here"):
        read_content([part], "messages[1].content", files=False)


async def test_the_response_index_persists_and_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "openai" / "responses.jsonl"
    index = ResponseIndex(path, limit=3)
    for n in range(7):
        await index.record(f"resp_{n}", "s", f"leaf{n}")
    assert await index.find("resp_6") == ("s", "leaf6")
    assert len(path.read_text().splitlines()) == 3  # rewritten past 2 x limit: the newest 3 kept
    reread = ResponseIndex(path, limit=3)
    assert await reread.find("resp_0") is None
    assert [await reread.find(f"resp_{n}") for n in (4, 5, 6)] == [
        ("s", "leaf4"),
        ("s", "leaf5"),
        ("s", "leaf6"),
    ]
    with path.open("a") as torn:
        torn.write('{"id": "resp_7", "sess')  # a crash mid-line: that line is skipped
    assert await ResponseIndex(path).find("resp_6") == ("s", "leaf6")
