"""`ragpg --version`, `ragpg config show` (value and source of every setting, secrets masked, --json)
and `ragpg config init` (a commented file that loads as the defaults; no overwrite without --force)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from rag.config import load_settings
from rag.config_report import MASK, config_report, mask_url
from ragpg_cli.config_init import default_config_text
from tests.support.cli import ragpg, run_in_process, use_ragpg_env


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    use_ragpg_env(monkeypatch, {})
    return tmp_path / "ragpg.toml"


def test_version(capsys) -> None:
    import importlib.metadata

    code, out, _ = run_in_process(capsys, "--version")
    assert code == 0 and out.startswith(f"ragpg {importlib.metadata.version('ragpg')} (Python ")
    done = ragpg("--version")  # the real console path, without any database
    assert done.returncode == 0 and done.stdout.startswith("ragpg ")


def test_show_names_each_source_and_masks_secrets(clean_env: Path, monkeypatch, capsys) -> None:
    clean_env.write_text('[embedding]\nbatch_size = 7\n[llm]\napi_key = "sk-from-file-123"\n'
                         '[profiles.mine]\nbase = "notes"\nw_freshness = 0.2\n')
    monkeypatch.setenv("RAGPG_EMBEDDING__MODEL", "hash")
    monkeypatch.setenv("DATABASE_URL", "postgresql://ragpg:hunter2@db.example:5432/ragpg")
    monkeypatch.setenv("RAGPG_READ_DATABASE_URL", "postgresql://ragpg:hunter3@replica.example:5432/ragpg")
    monkeypatch.setenv("RAGPG_SERVER", '{"port": 9000}')
    code, out, err = run_in_process(capsys, "--config", str(clean_env), "config", "show", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["config_file"] == str(clean_env) and data["config_file_exists"] is True
    rows = {r["name"]: r for r in data["settings"]}
    assert {k: v for k, v in rows["embedding.model"].items() if k != "description"} == {
        "name": "embedding.model", "value": "hash", "source": "env RAGPG_EMBEDDING__MODEL"}
    assert rows["embedding.batch_size"]["value"] == 7 and rows["embedding.batch_size"]["source"] == "config file"
    assert rows["server.port"]["value"] == 9000 and rows["server.port"]["source"] == "env RAGPG_SERVER"
    assert rows["chunking.soft_bytes"]["source"] == "default"
    assert rows["llm.api_key"]["value"] == MASK and rows["llm.api_key"]["source"] == "config file"
    assert rows["database_url"]["value"] == f"postgresql://ragpg:{MASK}@db.example:5432/ragpg"
    assert rows["read_database_url"]["source"] == "env RAGPG_READ_DATABASE_URL"
    assert rows["read_database_url"]["value"] == f"postgresql://ragpg:{MASK}@replica.example:5432/ragpg"
    assert rows["profiles.mine"]["value"] == {"base": "notes", "w_freshness": 0.2}
    assert "hunter2" not in out and "hunter3" not in out and "sk-from-file-123" not in out
    code, human, _ = run_in_process(capsys, "--config", str(clean_env), "config", "show", "--changed")
    assert code == 0 and "hunter2" not in human and "sk-from-file" not in human
    assert "embedding.model" in human and "[env RAGPG_EMBEDDING__MODEL]" in human
    assert "chunking.soft_bytes" not in human  # --changed: defaults left out


def test_show_without_a_config_file_and_with_a_bad_one(clean_env: Path, capsys) -> None:
    code, out, _ = run_in_process(capsys, "--config", str(clean_env), "config", "show")
    assert code == 0 and "(not present: defaults and environment only)" in out.splitlines()[0]
    clean_env.write_text("[embedding]\nno_such_setting = 1\n")
    code, out, err = run_in_process(capsys, "--config", str(clean_env), "config", "show")
    assert code != 0 and out == "" and err.strip() == (
        f"error: unknown setting 'embedding.no_such_setting' (config file {clean_env})")


@pytest.mark.parametrize(("url", "secret"), [
    ("postgresql://u:p%40ss@h:5/d?sslmode=require", "p%40ss"),
    ("host=h user=u password=s3cret dbname=d", "s3cret"),
    ("postgresql://:EMPTYUSERPW@localhost:5999/db", "EMPTYUSERPW"),  # no user name: psycopg reads a password
    ("host=localhost port=5999 password='my secret phrase' sslmode=bogus", "secret phrase"),
    ("host=h password='it\\'s s3cret' dbname=d", "s3cret"),
    ("postgresql://h/d?user=u&password=qp%20s3cret&sslmode=require", "s3cret"),
])
def test_mask_url(url: str, secret: str) -> None:
    from rag.store.database import mask_url as mask_in_errors

    for masked in (mask_url(url), mask_in_errors(url)):  # one rule: config show and error messages
        assert secret not in masked and ("***" in masked), masked


def test_show_masks_credentials_in_any_url_setting(clean_env: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAGPG_LLM__API_BASE", "https://bob:ProxyPassw0rd99@llm-proxy.internal/v1")
    monkeypatch.setenv("RAGPG_TRACING__LANGFUSE_HOST", "https://lf:LfPassw0rd@lf.internal")
    code, out, err = run_in_process(capsys, "--config", str(clean_env), "config", "show", "--json")
    assert code == 0, err
    assert "ProxyPassw0rd99" not in out and "LfPassw0rd" not in out and "llm-proxy.internal" in out


def test_init_writes_a_commented_file_that_loads_as_the_defaults(clean_env: Path, capsys) -> None:
    code, out, err = run_in_process(capsys, "--config", str(clean_env), "config", "init")
    assert code == 0 and out == "" and str(clean_env) in err
    text = clean_env.read_text()
    assert text.startswith("# ragpg configuration (TOML).")
    assert "[embedding]\n" in text and '\n#model = "local"\n' in text and "[profiles.my_notes]" in text
    assert tomllib.loads(text) == {k: {} for k in tomllib.loads(text)}  # only empty tables: all commented
    assert load_settings(clean_env) == load_settings(clean_env.parent / "absent.toml")
    # (tests/foundation/test_setting_descriptions.py uncomments every setting and loads the defaults back)

    code, _, err = run_in_process(capsys, "--config", str(clean_env), "config", "init")
    assert code == 2 and err.strip() == f"error: config file {clean_env} already exists; use --force to overwrite it"
    clean_env.write_text("# mine\n")
    code, out, _ = run_in_process(capsys, "--config", str(clean_env), "config", "init", "--force", "--json")
    assert code == 0 and json.loads(out) == {"config_file": str(clean_env)}
    assert clean_env.read_text() == default_config_text()


def test_init_to_an_explicit_path_and_a_bad_one(clean_env: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "sub" / "dir" / "ragpg.toml"
    assert run_in_process(capsys, "config", "init", str(target))[0] == 0 and target.is_file()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_in_process(capsys, "config", "init", str(blocker / "ragpg.toml"))
    assert code != 0 and err.startswith("error: cannot write config file") and len(err.strip().splitlines()) == 1


def test_report_reads_the_sources_it_is_given(clean_env: Path) -> None:
    clean_env.write_text("[retrieval]\nrrf_k = 42\n")
    report = config_report(clean_env, environ={})
    rows = {s.name: s for s in report.settings}
    assert rows["retrieval.rrf_k"].value == 42 and rows["retrieval.rrf_k"].source == "config file"


def test_shell_completion() -> None:
    # The shell named, not detected: detection reads the parent processes, which a CI runner or a
    # background job may not show as a shell.
    script = ragpg("--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert script.returncode == 0 and "complete -o default -F _ragpg_completion ragpg" in script.stdout
    done = ragpg(env={"COMP_WORDS": "ragpg con", "COMP_CWORD": "1", "_RAGPG_COMPLETE": "complete_bash"})
    assert done.returncode == 0 and done.stdout.split() == ["config"]
