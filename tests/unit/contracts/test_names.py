"""Look-alike tool names: a name's skeleton, the invisible characters a name may not hold, and a sync that declares
two tools an agent could not tell apart."""

import unicodedata

import pytest
from pydantic import ValidationError

from toolsel.contracts import PluginSync, ToolSpec
from toolsel.contracts.names import LOOKALIKES, first_lookalikes, lookalike_of, skeleton, visible
from toolsel.messaging import validation_reply

PLAIN = "send_email"


@pytest.mark.parametrize(
    "lookalike",
    [
        "\u0455end_email",  # Cyrillic dze
        "s\u0435nd_\u0435m\u0430il",  # Cyrillic ie and a
        "send_em\u03b1\u03b9l",  # Greek alpha and iota
        "\uff53\uff45\uff4e\uff44_email",  # full width
        "\U0001d42c\U0001d41e\U0001d427\U0001d41d_email",  # mathematical bold
        "se\u200dnd_email",  # zero-width joiner
        "send\u200b_email\ufeff",  # zero-width space, byte order mark
        "send_e\u00admail",  # soft hyphen
        "\u202esend_email",  # right-to-left override
        "se\u0301nd_email",  # a combining acute accent
        "s\u00e9nd_email",  # the same, precomposed
        "send_ema\u0131l",  # Latin dotless i
        "Send_Email",
        "SEND_EMAIL",
        "\u0405END_EMAIL",  # Cyrillic capital Dze
        "send\uff3femail",  # full-width low line
        "send\x1b_email\x7f",  # control characters (refused in a name; a stored one's skeleton leaves them out)
    ],
)
def test_look_alikes_of_a_name_share_its_skeleton(lookalike: str) -> None:
    assert lookalike != PLAIN
    assert skeleton(lookalike) == skeleton(PLAIN) == PLAIN


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("get_user", "get_users"),
        ("get_user", "get-user"),
        ("tool_1", "tool_l"),  # ASCII is read as written
        ("tool_0", "tool_o"),
        ("rn_tool", "m_tool"),
        ("send_email", "send_mail"),
        ("\u0397ello", "\u03b7ello"),  # Greek capital eta reads H, its lower case n
    ],
)
def test_names_that_look_different_keep_apart(one: str, other: str) -> None:
    assert skeleton(one) != skeleton(other)


def test_greek_capitals_read_as_the_latin_capitals_they_look_like() -> None:
    assert skeleton("\u0397ELLO") == skeleton("Hello") == "hello"
    assert skeleton("\u03b7ello") == "nello"


def test_every_table_entry_survives_normalisation_and_reads_as_ascii() -> None:
    """An entry that NFKC rewrites would never be looked up; every target is the ASCII it stands for."""
    for target, sources in LOOKALIKES.items():
        assert target.isascii()
        for source in sources:
            assert unicodedata.normalize("NFKC", source) == source, hex(ord(source))
            assert skeleton(source) == target.casefold(), hex(ord(source))


def test_a_skeleton_is_its_own_skeleton() -> None:
    for name in ["\u0455end_email", "\u0130stanbul", "caf\u00e9", "\u0397ELLO", "\u0500ata"]:
        assert skeleton(skeleton(name)) == skeleton(name)


@pytest.mark.parametrize(
    "hidden", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066", "\u2028", "\u3164"]
)
def test_a_name_holding_an_invisible_character_is_refused(hidden: str) -> None:
    with pytest.raises(ValueError, match=f"U\\+{ord(hidden):04X}.* at 4 is not allowed"):
        visible(f"send{hidden}_email")


@pytest.mark.parametrize("name", [PLAIN, "caf\u00e9", "\u0455end_email", "\u043f\u043e\u0447\u0442\u0430", "a b"])
def test_a_name_of_visible_characters_is_kept(name: str) -> None:
    assert visible(name) == name


def test_the_first_pair_of_look_alikes_is_found_and_plain_names_pass() -> None:
    assert first_lookalikes(["get_user", "get_users", "list_users"]) is None
    assert first_lookalikes(["a", "send_email", "b", "Send_Email", "\u0455end_email"]) == (1, 3)


def test_a_look_alike_of_another_tool_is_named_and_the_same_name_is_not_one() -> None:
    others = [("crm/send_email", "send_email"), ("crm/get_user", "get_user")]
    assert lookalike_of({0: "send_email", 1: "get_users"}, others) is None
    assert lookalike_of({0: "get_users", 4: "\u0455end_email", 7: "G\u0435t_user"}, others) == (4, "crm/send_email")


def _sync(*names: str, plugin_id: str = "mail") -> dict[str, object]:
    tools = [{"name": name, "description": "does a thing"} for name in names]
    return {"plugin_id": plugin_id, "plugin_version": "1.0.0", "tools": tools}


def test_a_tool_name_with_a_zero_width_joiner_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as refused:
        PluginSync.model_validate(_sync("list_events", "se\u200dnd_email"))
    error = validation_reply(refused.value).error
    assert (error.code, error.field) == ("invalid_request", "tools.1.name")
    assert "U+200D (ZERO WIDTH JOINER)" in error.message


def test_a_sync_declaring_two_look_alike_tools_is_refused_naming_both() -> None:
    with pytest.raises(ValidationError) as refused:
        PluginSync.model_validate(_sync("send_email", "list_events", "\uff53end_email"))
    error = validation_reply(refused.value).error
    assert error.code == "invalid_request"
    assert "tools.2.name: '\\uff53end_email' looks like tools.0.name 'send_email'" in error.message


def test_plain_names_that_differ_pass() -> None:
    sync = PluginSync.model_validate(_sync("get_user", "get_users", "get-user", "\u043f\u043e\u0447\u0442\u0430"))
    assert [t.name for t in sync.tools] == ["get_user", "get_users", "get-user", "\u043f\u043e\u0447\u0442\u0430"]


@pytest.mark.parametrize("plugin_id", ["m\u0430il", "ma\u200dil", "\uff4dail", "Mail"])
def test_a_plugin_id_is_plain_lower_case_ascii_so_it_has_no_look_alikes(plugin_id: str) -> None:
    with pytest.raises(ValidationError) as refused:
        PluginSync.model_validate(_sync(PLAIN, plugin_id=plugin_id))
    assert validation_reply(refused.value).error.field == "plugin_id"


def test_a_tool_spec_alone_refuses_an_invisible_name() -> None:
    with pytest.raises(ValidationError):
        ToolSpec(name="send_email\u2063", description="invisible separator")
