"""Settings refuse values that would break a selection, with pydantic's typed error naming the field."""

import json
import logging
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from toolsel.settings import CONFIDENCE_COEFFICIENTS, ENV_PREFIX, Settings, SettingsRefused, load_settings, variable


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("usage_declared_prior", -1.0),
        ("usage_declared_weight", 1.5),
        ("fusion_zscore_bm25_factor", -0.1),
        ("fusion", "harmonic"),
        ("embedding_workers", 0),
        ("select_concurrency", 0),
        ("learner_batches_in_flight", 0),
    ],
)
def test_a_bad_value_is_refused_naming_its_setting(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(**{field: value})
    assert refused.value.errors()[0]["loc"] == (field,)


@pytest.mark.parametrize(("name", "value"), [("prior_alpha", 0.0), ("prior_beta", -1.0), ("not_called_penalty", -0.5)])
def test_a_prior_or_penalty_that_breaks_the_beta_posterior_is_refused(name: str, value: float) -> None:
    """A Beta prior of 0 or less made every posterior mean NaN; a negative penalty raised a tool for being ignored."""
    with pytest.raises(ValidationError, match=name):
        Settings(**{name: value})  # type: ignore[arg-type]


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """An environment of no TOOLSEL_* variable, in a directory of no .env: what each test sets is all there is."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("embedding_dim", "0"),
        ("embedding_batch_size", "0"),
        ("embedding_threads", "0"),
        ("query_cache_size", "-1"),
        ("learner_batch_size", "0"),
        ("learner_batch_timeout_s", "-1"),
        ("learner_ack_wait_s", "0"),
        ("max_deliver", "0"),
        ("orphan_timeout_s", "-1"),
        ("policy_cache_ttl_s", "0"),
        ("tool_list_cache_ttl_s", "-5"),
        ("review_index_refresh_s", "0"),
        ("quarantine_check_interval_s", "0"),
        ("quality_window", "0"),
        ("quality_window", "-1"),
        ("quarantine_after", "0"),
        ("probation_calls", "0"),
        ("review_clusters", "0"),
        ("review_neighbours", "-1"),
        ("bm25_confidence_scale", "0"),
        ("degrade_threshold", "5"),
        ("latency_reference_ms", "0"),
        ("drift_days", "0"),
        ("poison_attempts", "0"),
        ("log_level", "verbose"),
        # the selector started with these and failed every select (or exited 1 naming no variable)
        ("confidence_coefficients", '{"intercept": -4.0}'),
        ("confidence_coefficients", json.dumps({**CONFIDENCE_COEFFICIENTS, "cosin": 1.0})),
        ("context_key_template", "{tier}:{pgae}"),
        ("context_key_template", "{tier}:{page"),
        ("context_key_template", "{}:{page}"),
        ("fusion_weights", '{"bm52": 0.5}'),
        ("rerank_weights", '{"fitnes": 0.5}'),
    ],
)
def test_a_bad_value_in_the_environment_is_refused_naming_its_variable(
    environment: pytest.MonkeyPatch, field: str, value: str
) -> None:
    environment.setenv(variable(field), value)
    with pytest.raises(SettingsRefused) as refused:
        load_settings()
    assert str(refused.value).startswith(f"{variable(field)}: "), refused.value
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("low", "high", "values"),
    [
        ("auto_k_floor", "auto_k_ceiling", (10, 2)),
        ("retrieval_candidates", "exploration_depth", (100, 90)),
        ("spelling_one_edit_length", "spelling_two_edits_length", (9, 8)),
        ("restart_backoff_s", "restart_backoff_max_s", (60.0, 30.0)),
        ("quarantine_release_after_s", "quarantine_release_max_s", (7200.0, 3600.0)),
        ("sync_max_bytes", "sync_staged_max_bytes", (2**26, 2**25)),
        ("learner_batch_timeout_s", "learner_ack_wait_s", (10.0, 10.0)),
    ],
)
def test_a_pair_out_of_order_is_refused_naming_both_variables(
    environment: pytest.MonkeyPatch, low: str, high: str, values: tuple[float, float]
) -> None:
    """A floor above its ceiling (or a first wait above the longest...) would be ignored in silence."""
    environment.setenv(variable(low), str(values[0]))
    environment.setenv(variable(high), str(values[1]))
    with pytest.raises(SettingsRefused) as refused:
        load_settings()
    assert variable(low) in str(refused.value), refused.value
    assert variable(high) in str(refused.value), refused.value
    environment.delenv(variable(low))
    load_settings()  # the same ceiling with the default floor is fine


def test_an_empty_value_is_the_default(environment: pytest.MonkeyPatch) -> None:
    """`TOOLSEL_PLUGIN_SECRETS=` in a .env template, or compose's `${TOOLSEL_ADMIN_TOKEN:-}`: unset, not an error."""
    for field in ("plugin_secrets", "gateway_urls", "embedding_dim", "log_level", "admin_token", "model_dir"):
        environment.setenv(variable(field), "")
    loaded, default = load_settings(), Settings()
    for field in ("plugin_secrets", "gateway_urls", "embedding_dim", "log_level", "admin_token", "model_dir"):
        assert getattr(loaded, field) == getattr(default, field), field


def test_an_empty_value_in_dot_env_is_the_default(environment: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TOOLSEL_PLUGIN_SECRETS=\nTOOLSEL_EMBEDDING_DIM=\n")
    assert load_settings().plugin_secrets == {}
    assert load_settings().embedding_dim == Settings().embedding_dim


@pytest.mark.parametrize("field", ["plugin_secrets", "gateway_urls", "rerank_weights", "tier_order"])
def test_a_value_that_is_not_json_is_refused_as_such(environment: pytest.MonkeyPatch, field: str) -> None:
    environment.setenv(variable(field), "notjson")
    with pytest.raises(SettingsRefused, match=rf"^{variable(field)}: not valid JSON \("):
        load_settings()


def test_json_from_dot_env_that_does_not_parse_says_so(environment: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text('TOOLSEL_PLUGIN_SECRETS={"a": "secret-value"\n')
    with pytest.raises(SettingsRefused) as refused:
        load_settings()
    assert str(refused.value).startswith("TOOLSEL_PLUGIN_SECRETS (in .env): not valid JSON"), refused.value
    assert "secret-value" not in str(refused.value)


@pytest.mark.parametrize("given", ["debug", "Warning", " error ", "CRITICAL"])
def test_a_log_level_is_read_in_any_case(environment: pytest.MonkeyPatch, given: str) -> None:
    environment.setenv("TOOLSEL_LOG_LEVEL", given)
    level = load_settings().log_level
    assert level == given.strip().upper()
    assert isinstance(logging.getLevelName(level), int)  # what logging.basicConfig(level=...) accepts


def test_the_defaults_are_valid(environment: pytest.MonkeyPatch) -> None:
    assert load_settings() == Settings()
