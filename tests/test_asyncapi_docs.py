"""The committed AsyncAPI documents are what FastStream generates from the apps today."""

from pathlib import Path

from toolsel.cli.asyncapi import documents
from toolsel.contracts import subjects
from toolsel.messaging import this_instance

DOCS = Path(__file__).resolve().parents[1] / "docs" / "asyncapi"


def test_committed_asyncapi_documents_are_current() -> None:
    generated = documents()
    assert set(generated) == {"selector", "learner", "indexer"}
    for name, text in generated.items():
        committed = (DOCS / f"{name}.json").read_text()
        assert committed == text, f"docs/asyncapi/{name}.json is stale: run `toolsel asyncapi`"


def test_documents_name_every_subject_the_services_use() -> None:
    text = "".join(documents().values())
    for subject in ("toolsel.rpc.select", "toolsel.rpc.sync", "toolsel.events.outcome", "toolsel.notify.posteriors"):
        assert subject in text


def test_documents_show_each_copys_own_health_subject_on_no_machine_in_particular() -> None:
    generated = documents()
    for name, text in generated.items():
        assert f'"{subjects.instance_health(name, subjects.INSTANCE)}"' in text, name
        assert subjects.instance_health(name, this_instance()) not in text, name
