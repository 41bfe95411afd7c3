"""Each public source's files, in the shape its repository holds them, read into labelled queries over a catalog."""

import csv
import io
import json

import pytest

from toolsel.evaluation.dataset import Tool
from toolsel.training_data.readers import (
    SourceFormatError,
    apibank_relevant,
    apibank_tool,
    read_apibank,
    read_callnavi,
    read_nestful,
    read_seal_dev,
    read_sgd,
    read_toolalpaca,
    read_toollens,
    read_tooltalk,
    toolalpaca_tool,
    toollens_tool,
    tooltalk_tools,
)


def jsonl(*rows: object) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


TOOLLENS_DOC = (
    "category_name:Food, tool_name:Worldwide Recipes, api_name:Suggestions, api_description:Get Suggestions, "
    'for a dish, required_params: [{"name": "q", "type": "STRING", "description": "dish"}], '
    'optional_params: [{"name": "limit", "type": "NUMBER", "description": ""}], return_schema: {"ok": "bool"}'
)


def test_toollens_document_becomes_a_named_endpoint_with_a_schema() -> None:
    tool = toollens_tool(TOOLLENS_DOC)
    assert tool == Tool(
        "Worldwide Recipes::Suggestions",
        "Get Suggestions, for a dish",
        {
            "type": "object",
            "properties": {"q": {"type": "string", "description": "dish"}, "limit": {"type": "number"}},
            "required": ["q"],
        },
    )
    with pytest.raises(SourceFormatError):
        toollens_tool("a plain description")


def test_toollens_queries_take_their_tools_from_every_qrels_file() -> None:
    files = {
        "datasets/ToolLens/corpus.jsonl": jsonl({"_id": "0", "text": TOOLLENS_DOC}),
        "datasets/ToolLens/queries.jsonl": jsonl({"_id": "7", "text": "dinner ideas"}, {"_id": "8", "text": "x"}),
        "datasets/ToolLens/qrels/train.tsv": b"query-id\tcorpus-id\tscore\n7\t0\t1\n7\t9\t1\n",
        "datasets/ToolLens/qrels/test.tsv": b"query-id\tcorpus-id\tscore\n8\t0\t0\n",
    }
    source = read_toollens(files)
    assert [(q.id, q.text, q.relevant) for q in source.queries] == [
        ("7", "dinner ideas", ("Worldwide Recipes::Suggestions",))
    ]
    assert [t.name for t in source.tools] == ["Worldwide Recipes::Suggestions"]


ALPACA_DOC = (
    "Get country info for the given country\n"
    'Parameters: {"countryCode": "Required. string. Two-letter code.", "year": "Optional. integer. "}\n'
    "Output: Success."
)


def test_toolalpaca_function_documentation_becomes_description_and_schema() -> None:
    assert toolalpaca_tool("Nager.Date", "CountryInfo", ALPACA_DOC) == Tool(
        "Nager.Date::CountryInfo",
        "Get country info for the given country",
        {
            "type": "object",
            "properties": {
                "countryCode": {"type": "string", "description": "Two-letter code."},
                "year": {"type": "integer", "description": ""},
            },
            "required": ["countryCode"],
        },
    )
    bare = toolalpaca_tool("A", "f", "Does a thing\nParameters: {}\nOutput: ok")
    assert bare.description == "Does a thing"
    assert bare.parameters == {
        "type": "object",
        "properties": {},
        "required": [],
    }


def test_toolalpaca_instructions_are_labelled_with_the_functions_their_answer_calls() -> None:
    api = {
        "Name": "Nager.Date",
        "Function_Description": {"CountryInfo": ALPACA_DOC, "Version": "Library version\nParameters: {}\nOutput: x"},
        "Instructions": ["Info on China?", "Which version, then China?", "Say hi"],
        "Golden_Answers": [
            [{"Action": "CountryInfo", "Action_Input": "{}"}],
            [{"Action": "Version"}, {"Action": "CountryInfo"}, {"Action": "Version"}],
            [{"Action": "Unknown"}],
        ],
    }
    source = read_toolalpaca({"data/eval_real.json": json.dumps([api]).encode()})
    assert [(q.id, q.relevant) for q in source.queries] == [
        ("eval_real/Nager.Date/0", ("Nager.Date::CountryInfo",)),
        ("eval_real/Nager.Date/1", ("Nager.Date::Version", "Nager.Date::CountryInfo")),
    ]


APIBANK_INFO = (
    'description = "Add an agenda item with a time."\n'
    "input_parameters = {\n"
    "    'token': {'type': 'str', 'description': 'User token.'},\n"
    "    'time': {'type': 'datetime', 'description': 'When.'}\n"
    "}\n"
    "output_parameters = {\n    'status': {'type': 'str', 'description': 'ok'}\n}"
)


def test_apibank_table_row_becomes_a_tool() -> None:
    assert apibank_tool("AddAgenda", APIBANK_INFO) == Tool(
        "AddAgenda",
        "Add an agenda item with a time.",
        {
            "type": "object",
            "properties": {
                "token": {"type": "str", "description": "User token."},
                "time": {"type": "datetime", "description": "When."},
            },
            "required": ["token", "time"],
        },
    )
    no_inputs = apibank_tool("GetToday", 'description = "Today\'s tasks."\ninput_parameters = {\n    None\n}\n')
    assert no_inputs.parameters == {"type": "object", "properties": {}, "required": []}


@pytest.mark.parametrize(
    ("called", "relevant"),
    [
        (["ToolSearcher", "GetUserToken", "AddAgenda", "AddAgenda"], ("AddAgenda",)),
        (["GetUserToken"], ("GetUserToken",)),
        (["ToolSearcher"], ()),
    ],
)
def test_apibank_relevant_leaves_out_the_search_and_a_preceding_login(called: list[str], relevant: tuple[str]) -> None:
    assert apibank_relevant(called) == relevant


def test_apibank_dialogue_is_its_first_request_and_the_apis_called() -> None:
    table = io.StringIO()
    csv.writer(table).writerows([["id", "类名", "api_info"], ["1", "AddAgenda", APIBANK_INFO]])
    dialogue = jsonl(
        {"role": "User", "text": "Add my meeting at 2pm"},
        {"role": "AI", "text": "Your username?"},
        {"role": "User", "text": "JohnDoe"},
        {"role": "API", "api_name": "GetUserToken", "param_dict": {}},
        {"role": "API", "api_name": "AddAgenda", "param_dict": {}},
    )
    files = {
        "api-bank/data/all_apis.csv": table.getvalue().encode(),
        "api-bank/lv1-lv2-samples/level-1-given-desc/AddAgenda-level-1-1.jsonl": dialogue,
    }
    source = read_apibank(files)
    assert [(q.id, q.text, q.relevant) for q in source.queries] == [
        ("lv1-lv2-samples/level-1-given-desc/AddAgenda-level-1-1.jsonl", "Add my meeting at 2pm", ("AddAgenda",))
    ]


def test_callnavi_tools_are_named_by_domain_and_questions_labelled_within_it() -> None:
    schema = {"type": "object", "properties": {"accountNumber": {"type": "string"}}}
    files = {
        "Dataset/APISchema/bank.json": json.dumps(
            [{"name": "getAccountID", "parameters": schema, "description": "Account ID of a customer."}]
        ).encode(),
        "Dataset/Questions/bank.json": json.dumps(
            [
                {
                    "id": "ban01",
                    "question": [{"role": "user", "content": "ID of account 123?"}],
                    "ground_truth": {"API": ["getAccountID"]},
                },
                {
                    "id": "ban02",
                    "question": [{"role": "user", "content": "Fly me"}],
                    "ground_truth": {"API": ["bookFlight"]},
                },
            ]
        ).encode(),
    }
    source = read_callnavi(files)
    assert source.tools == (Tool("bank::getAccountID", "Account ID of a customer.", schema),)
    assert [(q.id, q.relevant) for q in source.queries] == [("bank/ban01", ("bank::getAccountID",))]


def test_seal_dev_queries_are_labelled_over_the_evaluation_catalog() -> None:
    catalog = [Tool("getHealthWorkforce", "Health workforce numbers.", None), Tool("other", "", None)]
    files = {
        "Seal-Tools_Dataset/dev.jsonl": jsonl(
            {"id": "dev-0", "query": "Nurses in France?", "calling": [{"api": "getHealthWorkforce"}, {"api": "gone"}]},
            {"id": "dev-1", "query": "Unknown", "calling": [{"api": "gone"}]},
        )
    }
    source = read_seal_dev(files, catalog)
    assert source.catalog == "seal_tools"
    assert source.tools == tuple(catalog)
    assert [(q.id, q.relevant) for q in source.queries] == [("dev-0", ("getHealthWorkforce",))]


def nestful_files(glaive_spec: list[dict[str, object]]) -> dict[str, bytes]:
    spec = [
        {
            "name": "SkyScrapperSearchAirport",
            "description": "Airports matching a query.",
            "query_parameters": {"query": {"type": "string", "description": "City", "required": True}},
        }
    ]
    data = [
        {
            "input": "Airports of London and New York?",
            "output": [
                {"name": "SkyScrapperSearchAirport", "arguments": {}, "label": "var1"},
                {"name": "SkyScrapperSearchAirport", "arguments": {}, "label": "var2"},
                {"name": "var_result", "arguments": {}},
            ],
        }
    ]
    return {
        "data_v1/executable/executable-spec.json": json.dumps(spec).encode(),
        "data_v1/executable/executable-data.json": json.dumps(data).encode(),
        "data_v1/non-executable/non-executable-glaive-spec.json": json.dumps(glaive_spec).encode(),
        "data_v1/non-executable/non-executable-glaive-data.json": b"[]",
        "data_v1/non-executable/non-executable-sgd-spec.json": b"[]",
        "data_v1/non-executable/non-executable-sgd-data.json": b"[]",
    }


def test_nestful_inputs_are_labelled_with_the_functions_their_sequence_calls() -> None:
    source = read_nestful(nestful_files([]))
    assert source.tools == (
        Tool(
            "SkyScrapperSearchAirport",
            "Airports matching a query.",
            {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "City"}},
                "required": ["query"],
            },
        ),
    )
    assert [(q.id, q.relevant) for q in source.queries] == [("executable/0", ("SkyScrapperSearchAirport",))]


def test_nestful_refuses_a_function_name_used_by_two_specs() -> None:
    with pytest.raises(SourceFormatError, match="two specs"):
        read_nestful(nestful_files([{"name": "SkyScrapperSearchAirport", "description": "other"}]))


SGD_SCHEMA = [
    {
        "service_name": "Alarm_1",
        "description": "Manage alarms",
        "slots": [{"name": "new_alarm_time", "description": "Time of the new alarm"}],
        "intents": [
            {"name": "GetAlarms", "description": "Get the alarms set", "required_slots": [], "optional_slots": {}},
            {
                "name": "AddAlarm",
                "description": "Set a new alarm",
                "required_slots": ["new_alarm_time"],
                "optional_slots": {},
            },
        ],
    }
]


def sgd_turn(speaker: str, text: str, intent: str | None = None) -> dict[str, object]:
    frames = [] if intent is None else [{"service": "Alarm_1", "state": {"active_intent": intent}}]
    return {"speaker": speaker, "utterance": text, "frames": frames}


def test_sgd_intents_are_tools_and_the_turn_that_opens_a_service_the_query() -> None:
    dialogue = {
        "dialogue_id": "1_00000",
        "turns": [
            sgd_turn("USER", "Hi there", "NONE"),
            sgd_turn("USER", "What alarms do I have?", "GetAlarms"),
            sgd_turn("SYSTEM", "You have one at 7."),
            sgd_turn("USER", "Fine, thanks", "GetAlarms"),
            sgd_turn("USER", "Add one at 8 please", "AddAlarm"),
        ],
    }
    files = {
        "dev/schema.json": json.dumps(SGD_SCHEMA).encode(),
        "dev/dialogues_001.json": json.dumps([dialogue]).encode(),
    }
    source = read_sgd(files)
    assert source.tools[1] == Tool(
        "Alarm_1::AddAlarm",
        "Set a new alarm. Manage alarms",
        {
            "type": "object",
            "properties": {"new_alarm_time": {"type": "string", "description": "Time of the new alarm"}},
            "required": ["new_alarm_time"],
        },
    )
    assert [(q.id, q.text, q.relevant) for q in source.queries] == [
        ("dev/1_00000/1", "What alarms do I have?", ("Alarm_1::GetAlarms",))
    ]


TOOLTALK_MODULE = """
from .api import API


class AddAlarm(API):
    description = "Adds an alarm for a set time."
    parameters = {"time": {"type": "string", "description": "The time. Format: %H:%M:%S", "required": True}}
    output = {"alarm_id": {"type": "string"}}


class Helper:
    pass
"""


def test_tooltalk_api_classes_are_read_from_their_module_source() -> None:
    assert tooltalk_tools(TOOLTALK_MODULE) == [
        Tool(
            "AddAlarm",
            "Adds an alarm for a set time.",
            {
                "type": "object",
                "properties": {"time": {"type": "string", "description": "The time. Format: %H:%M:%S"}},
                "required": ["time"],
            },
        )
    ]


def test_tooltalk_request_is_what_the_user_said_since_the_previous_calls() -> None:
    def call(name: str) -> dict[str, object]:
        return {"request": {"api_name": name, "parameters": {}}}

    conversation = {
        "name": "AddAlarm-easy",
        "conversation": [
            {"role": "user", "text": "I have class at 7."},
            {"role": "assistant", "text": "Anything else?"},
            {"role": "user", "text": "Set an alarm for 6:30."},
            {"role": "assistant", "text": "Done.", "apis": [call("AddAlarm"), call("AddAlarm")]},
            {"role": "user", "text": "Thanks!"},
            {"role": "assistant", "text": "You're welcome."},
            {"role": "user", "text": "What's the weather?"},
            {"role": "assistant", "text": "Sunny.", "apis": [call("CurrentWeather")]},
        ],
    }
    files = {
        "src/tooltalk/apis/alarm.py": TOOLTALK_MODULE.encode(),
        "data/easy/AddAlarm-easy.json": json.dumps(conversation).encode(),
    }
    source = read_tooltalk(files)
    assert [(q.id, q.text, q.relevant) for q in source.queries] == [
        ("easy/AddAlarm-easy/4", "I have class at 7. Set an alarm for 6:30.", ("AddAlarm",))
    ]
