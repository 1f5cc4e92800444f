"""Notes citations (labels, block headers, reading them back), snippets, plain text, folder names and parsing."""

from __future__ import annotations

import pytest

from rag.errors import InputError
from rag.notes.citations import citation_for, cite_label, file_section_header, match_citations
from rag.notes.folders import Folder, map_folder_names, parse_folder_answer, resolve_user_folders
from rag.notes.format import snippet
from rag.types import Candidate


def cand(cid: int, path: str, heading: str, content: str, vault: str = "work") -> Candidate:
    return Candidate(chunk_id=cid, vault=vault, source_path=path, ordinal=cid, heading_path=heading,
                     content=content, metadata={})


CHUNKS = [
    cand(0, "projects/alpha.md", "# Alpha > ## Timeline", "Alpha ships in March."),
    cand(1, "projects/alpha.md", "# Alpha > ## Budget", "The budget is 40k."),
    cand(2, "meetings/2024-05-01.md", "", "We agreed to move the launch."),
]


def test_a_passage_is_cited_by_its_file_name_and_last_heading():
    assert [citation_for(c) for c in CHUNKS] == ["[File: alpha.md, Section: Timeline]",
                                                 "[File: alpha.md, Section: Budget]",
                                                 "[File: 2024-05-01.md, Section: (top of the note)]"]


def test_a_context_block_is_headed_by_its_first_passage_label():
    from rag.config_profiles import Profile
    from rag.context.assemble import assemble_context
    from rag.retrieval.rank import rank_candidates

    ranked = rank_candidates([CHUNKS[2], CHUNKS[0]], Profile())
    out = assemble_context(ranked, budget_tokens=1000, header=file_section_header)
    assert out.text.splitlines()[0] in (citation_for(CHUNKS[0]), citation_for(CHUNKS[2]))
    assert {b.header for b in out.blocks} == {citation_for(CHUNKS[0]), citation_for(CHUNKS[2])}
    assert out.blocks[0].header == cite_label(out.citations[0].source_path, out.citations[0].heading_path)




def test_citations_are_read_back_by_the_labels_shown():
    answer = ("[File: alpha.md, Section: Budget] [file: ALPHA.md,  section: timeline] "
              "[File: 2024-05-01.md, Section: (top of the note)] [File: alpha.md, Section: Budget]")
    m = match_citations(answer, CHUNKS)
    assert m.used == [1, 0, 2] and m.unmatched == [] and m.by_file_only == []


def test_citation_with_unknown_file_is_ignored_and_noted():
    answer = "X [File: beta.md, Section: Timeline]. Y [File: alpha.md, Section: Timeline]."
    m = match_citations(answer, CHUNKS)
    assert m.used == [0]
    assert m.unmatched == ["[File: beta.md, Section: Timeline]"]
    assert m.trace().unmatched_citations == ["[File: beta.md, Section: Timeline]"]


def test_citation_with_paraphrased_section_points_at_the_file():
    m = match_citations("[File: alpha.md, Section: Money matters] and [File: 2024-05-01.md]", CHUNKS)
    assert m.used == [0, 1, 2]
    assert m.by_file_only == ["[File: alpha.md, Section: Money matters]", "[File: 2024-05-01.md]"]


def test_snippet_starts_at_the_best_sentence():
    text = ("Intro sentence here. Another sentence. Key rotation opens the backup "
            "server and must rotate. " + "tail " * 100)
    out = snippet(text, ["backup", "server", "rotate"], 80)
    assert out.startswith("… Key rotation opens the backup")
    assert out.endswith(" …") and len(out) <= 80 + 4
    assert snippet("Short note about backups.", ["backup"], 80) == "Short note about backups."


@pytest.mark.parametrize("answer", [
    '["work/projects", "work/meetings"]',
    'Here are the folders:\n```json\n["work/projects", "work/meetings"]\n```',
    'Sure! The most relevant are ["work/projects", "work/meetings"] (in that order).',
    '[{"folder": "work/projects"}, {"name": "work/meetings"}]',
])
def test_parse_folder_answer_is_tolerant(answer):
    assert parse_folder_answer(answer) == ["work/projects", "work/meetings"]


@pytest.mark.parametrize("answer", ["projects, meetings", '["work/projects", ', "{}", ""])
def test_parse_folder_answer_rejects_malformed(answer):
    with pytest.raises(ValueError):
        parse_folder_answer(answer)


AVAILABLE = [Folder("work", ""), Folder("work", "projects"), Folder("work", "projects/alpha"),
             Folder("work", "meetings"), Folder("home", "recipes"), Folder("home", "projects")]


def test_map_folder_names_accepts_labels_and_unique_bare_names():
    picked, unknown = map_folder_names(["work/meetings", "recipes", "projects", "WORK/(top level)", "nope"],
                                       AVAILABLE)
    # "projects" is ambiguous (two vaults): ignored like an unknown name
    assert [f.label for f in picked] == ["work/meetings", "home/recipes", "work/(top level)"]
    assert unknown == ["projects", "nope"]


def test_user_folders_exact_prefix_and_vault_forms():
    scopes = resolve_user_folders(["work/projects"], AVAILABLE)
    assert [(s.vault, s.folder, s.subtree) for s in scopes] == [("work", "projects", True)]
    assert scopes[0].covers(Folder("work", "projects/alpha")) and not scopes[0].covers(Folder("home", "projects"))
    assert scopes[0].filter() == {"$or": [{"folder": "projects"}, {"folder": {"$prefix": "projects/"}}]}
    both = resolve_user_folders(["projects"], AVAILABLE)
    assert sorted((s.vault, s.folder) for s in both) == [("home", "projects"), ("work", "projects")]
    prefix = resolve_user_folders(["meet"], AVAILABLE)  # a string prefix of one folder
    assert [(s.vault, s.folder) for s in prefix] == [("work", "meetings")]
    case = resolve_user_folders(["Recipes"], AVAILABLE)
    assert [(s.vault, s.folder) for s in case] == [("home", "recipes")]


def test_unknown_user_folder_names_close_matches():
    with pytest.raises(InputError) as err:
        resolve_user_folders(["projcts"], AVAILABLE)
    message = str(err.value)
    assert "no folder named 'projcts'" in message and "did you mean" in message and "projects" in message
    with pytest.raises(InputError, match="no folder named 'zzz' in home, work$"):
        resolve_user_folders(["zzz"], AVAILABLE)


def test_a_vault_name_as_folder_means_the_whole_vault():
    scopes = resolve_user_folders(["home"], AVAILABLE)
    assert [(s.vault, s.label, s.filter()) for s in scopes] == [("home", "home/**", {})]
    assert all(scopes[0].covers(f) for f in AVAILABLE if f.vault == "home")
    prefix = resolve_user_folders(["work/proj"], AVAILABLE)  # prefix of projects and projects/alpha, one subtree
    assert [s.label for s in prefix] == ["work/projects/**"]


def test_a_string_prefix_of_several_folders_is_one_prefix_scope():
    folders = [Folder("j", "2024-01"), Folder("j", "2024-02/week1"), Folder("j", "2023-12")]
    scopes = resolve_user_folders(["2024-"], folders)
    assert [(s.label, s.filter()) for s in scopes] == [("j/2024-*", {"folder": {"$prefix": "2024-"}})]
    assert [f.folder for f in folders if scopes[0].covers(f)] == ["2024-01", "2024-02/week1"]


def test_stems_match_inflections():
    from rag.notes.question import stem

    pairs = [("notes", "note"), ("linked", "link"), ("linking", "links"), ("created", "create"),
             ("libraries", "library"), ("shipped", "ships"), ("running", "run"), ("backing", "back")]
    assert all(stem(a) == stem(b) for a, b in pairs)
    assert stem("keys") == "key" and stem("status") == "status" and stem("access") == "access"


def test_plain_text_keeps_code_blocks_and_placeholders():
    from rag.notes.format import plain

    text = "Run with id=<command-id> <b>now</b>.\n```bash\nid=<command-id> [[y]] **z**\n```\nThen [[w]]."
    assert plain(text) == "Run with id=<command-id> now.\n```bash\nid=<command-id> [[y]] **z**\n```\nThen w."
    # search snippets read as plain text too
    assert snippet("See [[Command palette|the palette]] for **all** commands.", ["palette"], 80) == (
        "See the palette for all commands.")


def test_a_passage_of_headings_only_is_shown_by_their_words_without_markers():
    """A passage holding nothing but a heading (a section whose text is in the next passage) is its own
    snippet, as the reader sees a heading: `## Group cards` reads `Group cards`."""
    assert snippet("## Group cards\n", ["group"], 80) == "Group cards"
    assert snippet("# Canvas\n\n### Add cards\n", ["canvas"], 80) == "Canvas Add cards"
    assert snippet("#hashtag and ## not a heading mid-line", ["hashtag"], 80) == "#hashtag and ## not a heading mid-line"
