"""`fetch_column`: the typed read of a query's one column refuses a query of several columns and a
value of another type (a null included) instead of handing the caller something it did not ask for."""

from __future__ import annotations

import pytest

from rag.store.database import fetch_column


def test_one_column_of_the_asked_type(conn) -> None:
    assert fetch_column(conn, int, "select g from generate_series(1, 3) g") == [1, 2, 3]
    assert fetch_column(conn, str, "select %s::text where false", ("x",)) == []


@pytest.mark.parametrize(("kind", "query", "problem"), [
    (int, "select 1, 2", "exactly one column"),
    (int, "select 'one'::text", "expected int values, got 'one'"),
    (str, "select null::text", "expected str values, got None"),
])
def test_anything_else_is_refused(conn, kind: type, query, problem: str) -> None:
    with pytest.raises(TypeError, match=problem):
        fetch_column(conn, kind, query)
