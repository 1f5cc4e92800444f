"""Profiles: built-ins, user tables from the config file, inheritance, and clear errors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag.config import load_settings
from rag.config_profiles import BUILTIN_PROFILES, DEFAULT_TYPE_WEIGHTS, Profile, get_profile, load_profiles
from rag.errors import ConfigError, NotFoundError


def settings_with(profiles):
    return SimpleNamespace(profiles=profiles)


def test_builtin_profiles():
    assert set(BUILTIN_PROFILES) == {"chat", "notes", "default_research", "decisions_recent", "templates_lookup"}
    research = BUILTIN_PROFILES["default_research"]
    assert (research.retrieval, research.w_bm25, research.w_cosine, research.w_freshness, research.per_source_cap) == (
        "hybrid", 0.60, 0.35, 0.05, 3)
    recent = BUILTIN_PROFILES["decisions_recent"]
    assert (recent.w_bm25, recent.w_cosine, recent.w_freshness, recent.per_source_cap) == (0.65, 0.20, 0.15, 4)
    assert recent.metadata_boost["notes"] > 0 and recent.metadata_boost["policy"] > 0 and recent.w_metadata > 0
    templates = BUILTIN_PROFILES["templates_lookup"]
    assert (templates.retrieval, templates.w_bm25, templates.w_metadata, templates.per_source_cap) == (
        "lexical", 0.90, 0.10, 5)
    assert BUILTIN_PROFILES["notes"].w_cosine > BUILTIN_PROFILES["notes"].w_bm25
    assert BUILTIN_PROFILES["chat"].type_weights == DEFAULT_TYPE_WEIGHTS
    assert all(p.name == name for name, p in BUILTIN_PROFILES.items())


def test_no_user_profiles_gives_the_builtins():
    assert load_profiles(settings_with({})) == BUILTIN_PROFILES


def test_user_profile_inherits_from_base_and_merges_mappings():
    profiles = load_profiles(settings_with({
        "mine": {"base": "decisions_recent", "w_freshness": 0.3, "type_weights": {"Memo": 1.2},
                 "ragMultiQueryMode": True},
    }))
    mine = profiles["mine"]
    assert mine.name == "mine" and mine.w_freshness == 0.3 and mine.multi_query is True
    assert mine.w_bm25 == 0.65 and mine.per_source_cap == 4  # inherited
    assert mine.type_weights["memo"] == 1.2 and mine.type_weights["photo"] == 0.30  # merged key by key
    assert "chat" in profiles


def test_user_profile_can_base_on_another_user_profile_and_adjust_a_builtin():
    profiles = load_profiles(settings_with({
        "child": {"base": "parent", "candidates": 5},
        "parent": {"base": "notes", "per_source_cap": 1},
        "chat": {"w_bm25": 0.7},
    }))
    assert profiles["child"].per_source_cap == 1 and profiles["child"].candidates == 5
    assert profiles["child"].w_cosine == BUILTIN_PROFILES["notes"].w_cosine
    assert profiles["chat"].w_bm25 == 0.7 and profiles["chat"].w_cosine == BUILTIN_PROFILES["chat"].w_cosine


def test_profile_without_base_starts_from_the_defaults():
    assert load_profiles(settings_with({"plain": {"retrieval": "vector"}}))["plain"] == Profile(
        name="plain", retrieval="vector")


@pytest.mark.parametrize(("table", "message"), [
    ({"w_bm25s": 0.5}, "profile 'bad': unknown key 'w_bm25s'"),
    ({"retrieval": "semantic"}, "profile 'bad': invalid 'retrieval'"),
    ({"w_bm25": -1}, "profile 'bad': invalid 'w_bm25'"),
    # settings that did nothing or collapsed into one are gone (k_min/k_max, mode, the per-leg counts)
    ({"k_min": 3}, "profile 'bad': unknown key 'k_min'"),
    ({"mode": "base"}, "profile 'bad': unknown key 'mode'"),
    ({"candidates_vector": 10}, "profile 'bad': unknown key 'candidates_vector'"),
    ({"candidates": 0}, "profile 'bad': invalid 'candidates'"),
    ({"type_weights": {"kb": -2}}, "invalid 'type_weights'"),
    ({"base": "nope"}, "unknown base 'nope'"),
    ({"base": 3}, "'base' must be a profile name"),
])
def test_bad_user_profiles_are_one_line_config_errors(table, message):
    with pytest.raises(ConfigError) as info:
        load_profiles(settings_with({"bad": table}))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_circular_bases_are_rejected():
    with pytest.raises(ConfigError, match="circular"):
        load_profiles(settings_with({"a": {"base": "b"}, "b": {"base": "a"}}))


def test_profile_table_must_be_a_table():
    with pytest.raises(ConfigError, match="must be a table"):
        load_profiles(settings_with({"x": 3}))


def test_get_profile_unknown_name_lists_known_profiles():
    with pytest.raises(NotFoundError) as info:
        get_profile("nope", BUILTIN_PROFILES)
    assert "unknown profile 'nope'" in str(info.value) and "default_research" in str(info.value)
    assert get_profile("notes").name == "notes"


def test_profiles_from_the_config_file(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGPG_CONFIG", raising=False)
    config = tmp_path / "config.toml"
    config.write_text('[profiles.team]\nbase = "chat"\nper_source_cap = 2\n'
                      '[profiles.team.persona_weights]\nengineer = 1.3\n')
    profiles = load_profiles(load_settings(config))
    assert profiles["team"].per_source_cap == 2 and profiles["team"].persona_weights == {"engineer": 1.3}

    config.write_text('[profiles.team]\nunknown_thing = 1\n')
    with pytest.raises(ConfigError) as info:  # at load, once, not at the first request naming the profile
        load_settings(config)
    assert str(info.value) == f"profile 'team': unknown key 'unknown_thing' (config file {config})"


def test_profiles_are_frozen():
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError for frozen models
        BUILTIN_PROFILES["chat"].w_bm25 = 1.0  # type: ignore[misc]
