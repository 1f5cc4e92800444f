"""`ragpg eval` and `ragpg eval-beir`: retrieval and answer quality, measured.

Both exit with ragpg's codes (README, "Errors and exit codes"): 1 runtime failure, 2 malformed
input (golden file, baseline, config, a BEIR dataset that is not loaded), 3 database, 4 not found
(a vault, a profile), ...; and 9 when a run is worse than its baseline (`ragpg eval --baseline`
only). Reports go to stdout (text, or JSON with --json); each error is one line on stderr.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ragpg_cli.app import info, print_json, say, state

GOLDEN_HELP = "Golden file (YAML, or JSON by its .json suffix): the cases to score."
PROFILE_HELP = ("Retrieval profile. 'notes' runs the notes answering path (modes ask, search); "
                "any profile runs compute_context with modes auto, base, hyde, rewrite, multi, reverse.")
MODE_HELP = "Mode: ask or search (notes profile), or a compute_context mode. Default: ask for notes, else auto."
SPLIT_HELP = ("Which cases run: dev, test, or all. --baseline and --save-baseline cover those cases; "
              "with all, the report also shows each split.")


def _exit_code(exc: BaseException) -> int:
    from rag.errors import RagError

    return exc.exit_code if isinstance(exc, RagError) else RagError.exit_code


def _fail(exc: BaseException) -> typer.Exit:
    info(f"error: {' '.join(str(exc).split()) or type(exc).__name__}")
    return typer.Exit(_exit_code(exc))


def eval_command(
    ctx: typer.Context,
    golden: Path = typer.Argument(..., help=GOLDEN_HELP),
    baseline: Path | None = typer.Option(None, "--baseline", help="Compare with this baseline (JSON); "
                                         "exit 9 when a metric falls below it by more than the tolerance."),
    profile: str = typer.Option("notes", "--profile", help=PROFILE_HELP),
    mode: str | None = typer.Option(None, "--mode", help=MODE_HELP),
    k: int = typer.Option(10, "--k", help="Metric cutoff and retrieval depth (recall@k, MRR@k)."),
    vault: list[str] = typer.Option([], "--vault", help="Search this vault for cases that name none "
                                    "(repeatable). Default: every vault."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    save_baseline: Path | None = typer.Option(None, "--save-baseline", help="Write this run's summary as a "
                                              "baseline file."),
    tolerance: float | None = typer.Option(None, "--tolerance", help="Largest drop below the baseline that is "
                                           "not a degradation. Default: setting eval.tolerance (0.02)."),
    split: str = typer.Option("all", "--split", help=SPLIT_HELP),
    unrelated_vault: str | None = typer.Option(None, "--unrelated-vault", help="Also run the cases with this "
                                               "(indexed) vault searched beside --vault, and report how the "
                                               "answers and abstentions differ. Needs --vault."),
) -> None:
    """Score retrieval (recall@k, recall@5, MRR, nDCG@10) and answers (abstention, expected facts, forbidden claims) against a golden file, per dev/test split; exit 9 when worse than --baseline."""  # one line: typer keeps line breaks
    from rag.extras import require_extra

    require_extra("eval", "ragpg eval")
    from rag.errors import InputError, RagError
    from rag.eval import evaluate_command
    from rag.eval.search import make_search_fn, resolve_mode
    from rag.runtime import Runtime
    from ragpg_cli.progress import CountBar

    try:
        settings = state(ctx).settings
        rt = Runtime.from_settings(settings, pool_max_size=2)
        search_fn = make_search_fn(rt, profile, mode, vault)
        unrelated = None
        if unrelated_vault is not None:
            if not vault or unrelated_vault in vault:
                raise InputError("--unrelated-vault needs --vault naming the vaults the cases are about, "
                                 "and a vault that is not one of them")
            unrelated = (unrelated_vault, make_search_fn(rt, profile, mode, [*vault, unrelated_vault]))
    except RagError as exc:
        raise _fail(exc) from None
    def database_reachable() -> None:
        from rag.store.locate import connect

        with connect(settings):
            pass

    def counted(case, depth):  # the runner's SearchFn, advancing the bar
        try:
            return search_fn(case, depth)
        finally:
            bar.advance()

    try:
        with CountBar("cases", _case_count(golden, split)) as bar:
            code = evaluate_command(golden, search_fn=counted, baseline_path=baseline,
                                    save_baseline_path=save_baseline,
                                    k=k, tolerance=settings.eval.tolerance if tolerance is None else tolerance,
                                    json_out=json_out, profile=profile, mode=resolve_mode(profile, mode),
                                    split=split, preflight=database_reachable, unrelated=unrelated)
    finally:
        rt.close()
    raise typer.Exit(code)


def _case_count(golden: Path, split: str) -> int | None:
    """How many cases the run has, for the bar; None when the file does not load (the run reports why)."""
    from rag.errors import RagError
    from rag.eval.golden import load_golden, select_split

    try:
        return len(select_split(load_golden(golden), split).cases)
    except (RagError, OSError, ValueError):
        return None


def eval_beir_command(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="BEIR dataset folder (queries.jsonl, qrels/<split>.tsv)."),
    split: str = typer.Option("test", "--split", help="Which qrels file to score: qrels/<split>.tsv."),
    vault: str | None = typer.Option(None, "--vault", help="The vault the corpus was loaded as. "
                                     "Default: the folder's name."),
    modes: str = typer.Option("vector,bm25,hybrid,auto", "--modes", help="Comma-separated retrieval modes: "
                              "vector, bm25, hybrid, auto."),
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Retrieval quality on a BEIR dataset loaded as a vault: nDCG@10, recall@100 and MRR@10 per mode.

    Load the corpus first: `ragpg vault add-beir NAME DIR`, then `ragpg index NAME`.
    """
    from rag.extras import require_extra

    require_extra("eval", "ragpg eval-beir")
    import psycopg

    from rag.errors import RagError
    from rag.eval.beir import eval_settings, load_beir_queries, parse_modes, render_text, run_beir
    from rag.runtime import Runtime
    from rag.store.locate import connect
    from ragpg_cli.progress import CountBar

    try:
        chosen = parse_modes(modes)
        data = load_beir_queries(directory, split)
        settings = eval_settings(state(ctx).settings)
        with connect(settings):  # an unreachable database fails here, at once
            pass
        rt = Runtime.from_settings(settings, pool_max_size=2)
        try:
            with CountBar("queries", len(data.queries) * len(chosen)) as bar:
                report = run_beir(rt, data, vault or data.name, chosen, progress=info, tick=bar.advance)
        finally:
            rt.close()
    except (RagError, psycopg.Error) as exc:
        raise _fail(exc) from None
    if json_out:
        print_json(report.to_dict())
    else:
        say(render_text(report), nl=False)
