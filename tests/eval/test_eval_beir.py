"""`ragpg eval-beir` on a tiny BEIR-format dataset written to tmp_path, with real Postgres.

The dataset: six documents, three judged test queries (one query id also names a document, which
BEIR's evaluator ignores), one train query, CRLF qrels with a header as the BEIR files have them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.errors import InputError
from rag.eval.beir import (
    BeirDataError,
    document_ranking,
    load_beir_queries,
    parse_modes,
    read_qrels,
    score_run,
)
from tests.eval.conftest import Run
from tests.support.cli import one_error_line
from tests.support.files import write_files

DOCS = [
    {"_id": "d1", "title": "Statins and cholesterol", "text": "Statins lower LDL cholesterol in adults."},
    {"_id": "d2", "title": "Sleep and memory", "text": "Deep sleep consolidates long-term memory."},
    {"_id": "d3", "title": "Vitamin D", "text": "Vitamin D supplements and bone density in the elderly."},
    {"_id": "d4", "title": "Coffee", "text": "Coffee intake and the risk of heart arrhythmia."},
    {"_id": "d5", "title": "Exercise", "text": "Aerobic exercise improves insulin sensitivity."},
    {"_id": "q3", "title": "Gut flora", "text": "Gut microbiota diversity after antibiotics."},
]
QUERIES = [
    {"_id": "q1", "text": "Do statins reduce LDL cholesterol?"},
    {"_id": "q2", "text": "Does deep sleep help memory consolidation?"},
    {"_id": "q3", "text": "Gut microbiota diversity after antibiotics"},
    {"_id": "q9", "text": "a train query"},
]
QRELS_TEST = "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td2\t1\r\nq3\td5\t1\r\n"


def dataset(root: Path, qrels: str = QRELS_TEST) -> Path:
    return write_files(root, {
        "corpus.jsonl": "".join(json.dumps(d) + "\n" for d in DOCS),
        "queries.jsonl": "".join(json.dumps(q) + "\n" for q in QUERIES),
        "qrels/test.tsv": qrels,
        "qrels/train.tsv": "query-id\tcorpus-id\tscore\nq9\td4\t1\n",
    })


def test_eval_beir_end_to_end(cli: Run, tmp_path: Path) -> None:
    root = dataset(tmp_path / "tiny")
    code, out, err = cli("eval-beir", root)
    assert (code, out) == (4, "")  # not found, as an unknown vault everywhere
    one_error_line(err, "vault 'tiny' is not loaded", f"ragpg vault add-beir tiny {root}", "ragpg index tiny")

    assert cli("vault", "add-beir", "tiny", root)[0] == 0
    code, out, err = cli("eval-beir", root)
    assert (code, out) == (4, "")  # as `ragpg ask` on a vault with nothing indexed
    one_error_line(err, "vault 'tiny' is loaded but not indexed", "ragpg index tiny")

    assert cli("index", "--quiet", "tiny")[0] == 0
    code, out, err = cli("eval-beir", root, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["vault"], data["split"], data["queries"], data["depth"]) == ("tiny", "test", 3, 100)
    assert data["model"].startswith("hash/")
    assert list(data["modes"]) == ["vector", "bm25", "hybrid", "auto"]
    for result in data["modes"].values():
        assert set(result["metrics"]) == {"ndcg@10", "recall@100", "mrr@10"}
        assert all(0.0 <= v <= 1.0 for v in result["metrics"].values())
        assert result["queries"] == 3
    # BM25 ranks q1's and q2's documents first; q3's judged document d5 shares no word with q3, and the
    # document whose id is the query id (q3) is ignored, as BEIR's evaluator does: 2 of 3 queries score 1.
    assert data["modes"]["bm25"]["metrics"] == pytest.approx({"ndcg@10": 2 / 3, "recall@100": 2 / 3,
                                                              "mrr@10": 2 / 3})
    assert data["modes"]["vector"]["metrics"]["recall@100"] == 1.0  # every document is among the top 100
    assert "bm25:" in err and "embedded 3 queries" in err  # progress on stderr

    code, out, err = cli("eval-beir", root, "--modes", "bm25,hybrid", "--vault", "tiny")
    assert code == 0, err
    assert "mode" in out and "bm25" in out and "hybrid" in out and "vector " not in out
    assert "ndcg@10" in out and "recall@100" in out and "mrr@10" in out

    code, out, err = cli("eval-beir", root, "--split", "train", "--modes", "bm25", "--json")
    assert code == 0, err
    assert json.loads(out)["queries"] == 1


def test_eval_beir_input_errors(cli: Run, tmp_path: Path) -> None:
    root = dataset(tmp_path / "tiny")
    code, _, err = cli("eval-beir", root, "--split", "dev")
    assert code == 2
    one_error_line(err, "no qrels for split 'dev'", "splits here: test, train")
    code, _, err = cli("eval-beir", root, "--modes", "vector,sparse")
    assert code == 2
    one_error_line(err, "unknown retrieval mode 'sparse'")
    code, _, err = cli("eval-beir", tmp_path / "absent")
    assert code == 2
    one_error_line(err, "BEIR dataset folder not found")
    notes = write_files(tmp_path / "notes", {"a.md": "# A\n\nsome text\n"})
    assert cli("vault", "add", "notes", notes)[0] == 0
    code, _, err = cli("eval-beir", root, "--vault", "notes")
    assert code == 2
    one_error_line(err, "vault 'notes' is a folder of notes, not a BEIR dataset")


def test_eval_beir_unreachable_database_is_exit_3(cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://127.0.0.1:1/nowhere?connect_timeout=2")
    code, out, err = cli("eval-beir", dataset(tmp_path / "tiny"))
    assert (code, out) == (3, "")  # as for every command
    one_error_line(err, "cannot connect to the database")


# -- the pieces, without a database ------------------------------------------------------------

def test_qrels_and_queries_parsing(tmp_path: Path) -> None:
    root = dataset(tmp_path / "tiny")
    data = load_beir_queries(root, "test")
    assert dict(data.queries) == {"q1": QUERIES[0]["text"], "q2": QUERIES[1]["text"], "q3": QUERIES[2]["text"]}
    assert data.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d5": 1}} and data.name == "tiny"

    bad = write_files(tmp_path / "bad", {"q.tsv": "query-id\tcorpus-id\tscore\nq1\td1\n"})
    with pytest.raises(BeirDataError, match=r"q\.tsv:2: expected 3 tab-separated fields"):
        read_qrels(bad / "q.tsv")
    write_files(bad, {"q.tsv": "q1\td1\t1\nq2\td2\thigh\n"})
    with pytest.raises(BeirDataError, match=r"q\.tsv:2: score 'high' is not an integer"):
        read_qrels(bad / "q.tsv")
    write_files(root, {"queries.jsonl": '{"_id": "q1", "text": "x"}\n{"_id": "q2"\n'})
    with pytest.raises(BeirDataError, match=r"queries\.jsonl:2: invalid JSON"):
        load_beir_queries(root, "test")


def test_metrics_follow_trec_eval() -> None:
    qrels = {"a": {"d1": 1}, "b": {"d2": 2, "d3": 1}, "c": {"d9": 1}}
    run = {"a": ["d5", "d1"], "b": ["d3", "d2"], "c": []}
    scores = score_run(qrels, run, 100)
    # a: RR 1/2; b: RR 1; c: no results -> 0.  MRR@10 = 1.5 / 3.
    assert scores["mrr@10"] == pytest.approx(0.5)
    assert scores["recall@100"] == pytest.approx(2 / 3)
    # nDCG@10: a = 1/log2(3); b = (1 + 2/log2(3)) / (2 + 1/log2(3)); c = 0.
    import math

    a = 1 / math.log2(3)
    b = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert scores["ndcg@10"] == pytest.approx((a + b) / 3)
    assert document_ranking(["d1", "q1", "d1", "d2", "d3"], "q1", 2) == ["d1", "d2"]


def test_parse_modes() -> None:
    assert parse_modes("Vector, bm25,,hybrid,bm25") == ("vector", "bm25", "hybrid")
    with pytest.raises(InputError, match="no retrieval mode"):
        parse_modes(" , ")
