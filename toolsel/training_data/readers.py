"""Readers of public tool-use data sets: each turns the contents of its files into labelled queries over a catalog.

A reader sees only ``{relative path: bytes}``; finding and hashing the files is the caller's work. Tool names
follow the evaluation sets' conventions (``<api>::<endpoint>`` for RapidAPI endpoints) and parameters become a
JSON schema, so a tool's text is built the same way as at serving time.
"""

import ast
import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from toolsel.evaluation.dataset import Tool

from .model import EXTERNAL, LabelledQuery, SourceSet

Files = Mapping[str, bytes]


class SourceFormatError(ValueError):
    """A source file is not in the shape its reader expects."""


def _json(files: Files, path: str) -> Any:
    try:
        return json.loads(files[path])
    except (KeyError, json.JSONDecodeError) as exc:
        raise SourceFormatError(f"{path}: {exc}") from exc


def _jsonl(content: bytes) -> Iterator[dict[str, Any]]:
    for line in content.decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _matching(files: Files, pattern: str) -> list[str]:
    return sorted(p for p in files if PurePosixPath(p).match(pattern))


def _schema(properties: Mapping[str, dict[str, Any]], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": [r for r in required if r in properties]}


def _flagged_schema(declared: object) -> dict[str, Any]:
    """``{name: {type, description, required: bool}}`` (NESTFUL, ToolTalk) as a JSON schema."""
    params = {str(n): p for n, p in declared.items() if isinstance(p, dict)} if isinstance(declared, dict) else {}
    properties = {n: {k: v for k, v in p.items() if k in ("type", "description")} for n, p in params.items()}
    return _schema(properties, [n for n, p in params.items() if p.get("required")])


# --- ToolLens (COLT): RapidAPI endpoints from ToolBench, queries written for them --------------------------------

_RAPIDAPI_TYPES = {"STRING": "string", "NUMBER": "number", "BOOLEAN": "boolean", "ARRAY": "array", "OBJECT": "object"}
_TOOLLENS_DOC = re.compile(
    r"^category_name:(?P<category>.*?), tool_name:(?P<tool>.*?), api_name:(?P<api>.*?), "
    r"api_description:(?P<description>.*?), required_params: (?P<required>\[.*?\]), "
    r"optional_params: (?P<optional>\[.*?\]), return_schema:",
    re.DOTALL,
)


def _rapidapi_property(param: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(param.get("type") or "string").upper()
    prop: dict[str, Any] = {"type": _RAPIDAPI_TYPES.get(kind, "string")}
    if param.get("description"):
        prop["description"] = str(param["description"])
    return prop


def toollens_tool(text: str) -> Tool:
    """A ToolLens corpus document (``category_name:…, tool_name:…, api_name:…, api_description:…,
    required_params: […], optional_params: […], return_schema: …``) as a tool named ``<tool>::<api>``."""
    match = _TOOLLENS_DOC.match(text)
    if match is None:
        raise SourceFormatError(f"not a ToolLens document: {text[:80]!r}")
    required, optional = json.loads(match["required"]), json.loads(match["optional"])
    properties = {str(p["name"]): _rapidapi_property(p) for p in [*required, *optional] if p.get("name")}
    return Tool(
        f"{match['tool'].strip()}::{match['api'].strip()}",
        match["description"].strip(),
        _schema(properties, [str(p["name"]) for p in required if p.get("name")]),
    )


def read_toollens(files: Files) -> SourceSet:
    corpus = {str(d["_id"]): toollens_tool(str(d["text"])) for d in _jsonl(files["datasets/ToolLens/corpus.jsonl"])}
    texts = {str(q["_id"]): str(q["text"]) for q in _jsonl(files["datasets/ToolLens/queries.jsonl"])}
    relevant: dict[str, list[str]] = {}
    for path in _matching(files, "datasets/ToolLens/qrels/*.tsv"):
        for row in csv.DictReader(io.StringIO(files[path].decode("utf-8")), delimiter="\t"):
            if int(row["score"]) > 0 and row["corpus-id"] in corpus:
                relevant.setdefault(row["query-id"], []).append(corpus[row["corpus-id"]].name)
    queries = tuple(
        LabelledQuery(qid, texts[qid], tuple(dict.fromkeys(names)))
        for qid, names in sorted(relevant.items())
        if qid in texts
    )
    return SourceSet("toollens", "toollens", _unique(corpus.values()), queries)


# --- ToolAlpaca: instructions over real public APIs, with the functions a correct answer calls ---------------------

_ALPACA_PARAMS = re.compile(r"\nParameters: (?P<params>\{.*?\})\n(?:Output:|$)", re.DOTALL)
_ALPACA_PARAM = re.compile(r"^(?P<req>Required|Optional)\. (?P<type>\w+)\. ?(?P<description>.*)$", re.DOTALL)


def toolalpaca_tool(api: str, function: str, documentation: str) -> Tool:
    """One function of a ToolAlpaca API: ``<description>\\nParameters: {name: "Required. type. text"}\\nOutput: …``."""
    description = documentation.split("\nParameters:", 1)[0].strip()
    match = _ALPACA_PARAMS.search(documentation)
    declared: dict[str, str] = json.loads(match["params"]) if match else {}
    properties: dict[str, dict[str, Any]] = {}
    required = []
    for name, text in declared.items():
        parsed = _ALPACA_PARAM.match(str(text))
        if parsed is None:
            properties[name] = {"description": str(text)}
            continue
        properties[name] = {"type": parsed["type"], "description": parsed["description"].strip()}
        if parsed["req"] == "Required":
            required.append(name)
    return Tool(f"{api}::{function}", description, _schema(properties, required))


def read_toolalpaca(files: Files) -> SourceSet:
    tools: dict[str, Tool] = {}
    queries = []
    for path in _matching(files, "data/eval_*.json"):
        for api in _json(files, path):
            name = str(api["Name"])
            functions = {f: toolalpaca_tool(name, f, str(doc)) for f, doc in api["Function_Description"].items()}
            tools.update({t.name: t for t in functions.values()})
            for i, (instruction, answer) in enumerate(zip(api["Instructions"], api["Golden_Answers"], strict=True)):
                called = tuple(dict.fromkeys(functions[s["Action"]].name for s in answer if s["Action"] in functions))
                if called:
                    queries.append(LabelledQuery(f"{PurePosixPath(path).stem}/{name}/{i}", str(instruction), called))
    return SourceSet("toolalpaca", "toolalpaca", tuple(tools.values()), tuple(queries))


# --- API-Bank: dialogues with the APIs called, over API-Bank's API table -------------------------------------------

_APIBANK_DESCRIPTION = re.compile(r'description\s*=\s*"(?P<text>(?:[^"\\]|\\.)*)"', re.DOTALL)
_APIBANK_INPUTS = re.compile(r"input_parameters\s*=\s*(?P<dict>\{.*?\n\})", re.DOTALL)
APIBANK_SEARCH = "ToolSearcher"
"""API-Bank's own retrieval step: a means to find the tool, not what the user asked for."""
APIBANK_LOGIN = "GetUserToken"
"""Called before most account APIs; relevant only when nothing else was called (the user asked to log in)."""


def apibank_tool(class_name: str, api_info: str) -> Tool:
    """One row of ``all_apis.csv``: its ``api_info`` holds Python source ``description = "…"`` and
    ``input_parameters = {name: {'type': …, 'description': …}}``."""
    described = _APIBANK_DESCRIPTION.search(api_info)
    inputs = _APIBANK_INPUTS.search(api_info)
    declared = ast.literal_eval(inputs["dict"]) if inputs else {}
    if not isinstance(declared, dict):  # ``{ None }``: an API without inputs
        declared = {}
    properties = {
        str(n): {"type": str(p.get("type", "string")), "description": str(p.get("description", ""))}
        for n, p in declared.items()
        if isinstance(p, dict)
    }
    return Tool(class_name, described["text"].strip() if described else "", _schema(properties, list(properties)))


def apibank_relevant(called: Sequence[str]) -> tuple[str, ...]:
    """The APIs a dialogue's request is about: every API called, less the tool search and, when anything else
    was called, the login that preceded it."""
    wanted = [name for name in dict.fromkeys(called) if name != APIBANK_SEARCH]
    rest = [name for name in wanted if name != APIBANK_LOGIN]
    return tuple(rest or wanted)


def read_apibank(files: Files) -> SourceSet:
    table = csv.DictReader(io.StringIO(files["api-bank/data/all_apis.csv"].decode("utf-8")))
    tools = {t.name: t for t in (apibank_tool(row["类名"].strip(), row["api_info"]) for row in table)}
    queries = []
    for path in _matching(files, "api-bank/lv1-lv2-samples/*/*.jsonl"):
        turns = list(_jsonl(files[path]))
        first = next((str(t["text"]) for t in turns if t.get("role") == "User"), "")
        called = apibank_relevant([str(t["api_name"]) for t in turns if t.get("role") == "API"])
        relevant = tuple(name for name in called if name in tools)
        if first.strip() and relevant:
            queries.append(LabelledQuery(str(PurePosixPath(path).relative_to("api-bank")), first, relevant))
    return SourceSet("api_bank", "api_bank", tuple(tools.values()), tuple(queries))


# --- CallNavi: questions over ten domains' API schemas ---------------------------------------------------------------


def read_callnavi(files: Files) -> SourceSet:
    tools: dict[str, Tool] = {}
    queries = []
    for path in _matching(files, "Dataset/APISchema/*.json"):
        domain = PurePosixPath(path).stem
        own = {
            str(t["name"]): Tool(f"{domain}::{t['name']}", str(t.get("description") or ""), t.get("parameters"))
            for t in _json(files, path)
        }
        tools.update({t.name: t for t in own.values()})
        for q in _json(files, f"Dataset/Questions/{domain}.json"):
            text = " ".join(str(m["content"]) for m in q["question"] if m.get("role") == "user")
            relevant = tuple(dict.fromkeys(own[a].name for a in q["ground_truth"]["API"] if a in own))
            if text.strip() and relevant:
                queries.append(LabelledQuery(f"{domain}/{q['id']}", text, relevant))
    return SourceSet("callnavi", "callnavi", tuple(tools.values()), tuple(queries))


# --- NESTFUL (v1): nested call sequences over RapidAPI, Glaive and SGD function specs -------------------------------

NESTFUL_SUBSETS = ("executable/executable", "non-executable/non-executable-glaive", "non-executable/non-executable-sgd")


def nestful_tool(spec: Mapping[str, Any]) -> Tool:
    return Tool(str(spec["name"]), str(spec.get("description") or ""), _flagged_schema(spec.get("query_parameters")))


def read_nestful(files: Files) -> SourceSet:
    """Each input labelled with the functions its sequence calls (the closing ``var_result`` step is no function)."""
    tools: dict[str, Tool] = {}
    queries = []
    for subset in NESTFUL_SUBSETS:
        own = {str(t["name"]): nestful_tool(t) for t in _json(files, f"data_v1/{subset}-spec.json")}
        if clash := own.keys() & tools.keys():
            raise SourceFormatError(f"NESTFUL: {sorted(clash)} named in two specs")
        tools.update(own)
        for i, sample in enumerate(_json(files, f"data_v1/{subset}-data.json")):
            called = tuple(dict.fromkeys(str(c["name"]) for c in sample["output"] if str(c["name"]) in own))
            if called:
                queries.append(LabelledQuery(f"{PurePosixPath(subset).name}/{i}", str(sample["input"]), called))
    return SourceSet("nestful", "nestful", tuple(tools.values()), tuple(queries))


# --- Schema-Guided Dialogue (SGD): each intent a tool, the user turn that opens it the query --------------------------


def sgd_tools(schema: Sequence[Mapping[str, Any]]) -> dict[str, Tool]:
    """One tool per intent, named ``<service>::<intent>``: the intent's description, then the service's; its
    required and optional slots as parameters."""
    tools = {}
    for service in schema:
        slots = {str(s["name"]): str(s.get("description") or "") for s in service["slots"]}
        for intent in service["intents"]:
            wanted = [*intent["required_slots"], *intent.get("optional_slots", {})]
            properties = {slot: {"type": "string", "description": slots.get(slot, "")} for slot in wanted}
            name = f"{service['service_name']}::{intent['name']}"
            description = f"{intent['description']}. {service['description']}".strip(". ")
            tools[name] = Tool(name, description, _schema(properties, list(intent["required_slots"])))
    return tools


def sgd_openings(dialogue: Mapping[str, Any]) -> Iterator[tuple[int, str, str]]:
    """``(turn, utterance, '<service>::<intent>')`` for the user turn where each service's first intent becomes
    active: the request that opens it. Later intents of the service are left out; their turns lean on what was
    said before ("can you book the car we found?")."""
    opened: set[str] = set()
    for i, turn in enumerate(dialogue["turns"]):
        if turn["speaker"] != "USER":
            continue
        for frame in turn["frames"]:
            intent = frame.get("state", {}).get("active_intent", "NONE")
            if intent != "NONE" and frame["service"] not in opened:
                opened.add(frame["service"])
                yield i, str(turn["utterance"]), f"{frame['service']}::{intent}"


def read_sgd(files: Files) -> SourceSet:
    tools: dict[str, Tool] = {}
    queries = []
    for split in sorted({PurePosixPath(p).parts[0] for p in _matching(files, "*/schema.json")}):
        own = sgd_tools(_json(files, f"{split}/schema.json"))
        tools.update(own)
        for path in _matching(files, f"{split}/dialogues_*.json"):
            for dialogue in _json(files, path):
                for turn, text, intent in sgd_openings(dialogue):
                    if intent in own:
                        queries.append(LabelledQuery(f"{split}/{dialogue['dialogue_id']}/{turn}", text, (intent,)))
    return SourceSet("sgd", "sgd", tuple(tools.values()), tuple(queries))


# --- ToolTalk: conversations whose assistant turns call the APIs of ToolTalk's suites --------------------------------


def tooltalk_tools(module_source: str) -> list[Tool]:
    """The API classes of one of ToolTalk's ``apis/*.py`` modules: those with literal ``description`` and
    ``parameters`` class attributes (``{name: {type, description, required}}``)."""
    tools = []
    for node in ast.parse(module_source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        attributes = {
            target.id: statement.value
            for statement in node.body
            if isinstance(statement, ast.Assign)
            for target in statement.targets
            if isinstance(target, ast.Name)
        }
        if "description" not in attributes or "parameters" not in attributes:
            continue
        description = ast.literal_eval(attributes["description"])
        parameters = _flagged_schema(ast.literal_eval(attributes["parameters"]))
        tools.append(Tool(node.name, str(description), parameters))
    return tools


def tooltalk_requests(conversation: Mapping[str, Any]) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """``(turn, request, APIs called)`` for each stretch of the conversation that ends in API calls: the request
    is what the user said since the previous calls (a request is often spread over turns: "change my password" …
    "how about X?"), the APIs those the assistant called before the user spoke again."""
    said: list[str] = []
    called: list[str] = []
    for i, turn in enumerate([*conversation["conversation"], {"role": "user", "text": ""}]):
        if turn["role"] != "user":
            called += [str(a["request"]["api_name"]) for a in turn.get("apis") or []]
            continue
        if called:
            yield i, " ".join(said), tuple(dict.fromkeys(called))
            said, called = [], []
        said.append(str(turn["text"]))


def read_tooltalk(files: Files) -> SourceSet:
    tools = {
        t.name: t
        for path in _matching(files, "src/tooltalk/apis/*.py")
        for t in tooltalk_tools(files[path].decode("utf-8"))
    }
    queries = []
    for path in _matching(files, "data/*/*.json"):
        conversation = _json(files, path)
        for turn, text, called in tooltalk_requests(conversation):
            relevant = tuple(name for name in called if name in tools)
            if text.strip() and relevant:
                queries.append(
                    LabelledQuery(f"{PurePosixPath(path).parent.name}/{conversation['name']}/{turn}", text, relevant)
                )
    return SourceSet("tooltalk", "tooltalk", tuple(tools.values()), tuple(queries))


# --- Seal-Tools' dev split, over the seal_tools evaluation catalog ---------------------------------------------------


def read_seal_dev(files: Files, catalog: Sequence[Tool]) -> SourceSet:
    names = {t.name for t in catalog}
    queries = []
    for q in _jsonl(files["Seal-Tools_Dataset/dev.jsonl"]):
        relevant = tuple(dict.fromkeys(str(c["api"]) for c in q["calling"] if c.get("api") in names))
        if relevant:
            queries.append(LabelledQuery(str(q["id"]), str(q["query"]), relevant))
    return SourceSet("seal_tools_dev", "seal_tools", tuple(catalog), tuple(queries))


def _unique(tools: Iterable[Tool]) -> tuple[Tool, ...]:
    """One tool per name (a corpus may list an endpoint twice; the copies are the same endpoint)."""
    return tuple({t.name: t for t in tools}.values())


@dataclass(frozen=True)
class SourceFormat:
    """Where a source lives, which of its files are read, and the evaluation set its data counts as."""

    name: str
    repository: str
    licence_file: str
    patterns: tuple[str, ...]
    group: str
    read: Callable[[Files, Sequence[Tool]], SourceSet]
    """Given the files and, for a source over an evaluation set's catalog, that set's tools."""
    catalog_of: str | None = None
    """The evaluation set whose catalog the source's queries are labelled over."""


SOURCES: tuple[SourceFormat, ...] = (
    SourceFormat(
        "toollens",
        "https://github.com/quchangle1/COLT",
        "LICENSE",
        ("datasets/ToolLens/corpus.jsonl", "datasets/ToolLens/queries.jsonl", "datasets/ToolLens/qrels/*.tsv"),
        "toolbench_stb",
        lambda files, _: read_toollens(files),
    ),
    SourceFormat(
        "toolalpaca",
        "https://github.com/tangqiaoyu/ToolAlpaca",
        "LICENSE",
        ("data/eval_real.json", "data/eval_simulated.json"),
        EXTERNAL,
        lambda files, _: read_toolalpaca(files),
    ),
    SourceFormat(
        "api_bank",
        "https://github.com/AlibabaResearch/DAMO-ConvAI",
        "api-bank/LICENSE",
        ("api-bank/data/all_apis.csv", "api-bank/lv1-lv2-samples/*/*.jsonl"),
        EXTERNAL,
        lambda files, _: read_apibank(files),
    ),
    SourceFormat(
        "callnavi",
        "https://github.com/Etamin/CallNavi",
        "LICENSE",
        ("Dataset/APISchema/*.json", "Dataset/Questions/*.json"),
        EXTERNAL,
        lambda files, _: read_callnavi(files),
    ),
    SourceFormat(
        "nestful",
        "https://github.com/TathagataChakraborti/NESTFUL",
        "LICENSE",
        tuple(f"data_v1/{subset}-{kind}.json" for subset in NESTFUL_SUBSETS for kind in ("spec", "data")),
        EXTERNAL,
        lambda files, _: read_nestful(files),
    ),
    SourceFormat(
        "sgd",
        "https://github.com/google-research-datasets/dstc8-schema-guided-dialogue",
        "LICENSE.txt",
        ("*/schema.json", "*/dialogues_*.json"),
        EXTERNAL,
        lambda files, _: read_sgd(files),
    ),
    SourceFormat(
        "tooltalk",
        "https://github.com/microsoft/ToolTalk",
        "LICENSE",
        ("src/tooltalk/apis/*.py", "data/easy/*.json", "data/tooltalk/*.json"),
        EXTERNAL,
        lambda files, _: read_tooltalk(files),
    ),
    SourceFormat(
        "seal_tools_dev",
        "https://github.com/fairyshine/Seal-Tools",
        "LICENSE",
        ("Seal-Tools_Dataset/dev.jsonl",),
        "seal_tools",
        read_seal_dev,
        catalog_of="seal_tools",
    ),
)
