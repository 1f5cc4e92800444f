"""Notes context format, citation parsing and matching, extractive answers, folder names and parsing."""

from __future__ import annotations

import math

import pytest

from rag.errors import InputError
from rag.notes.extractive import extractive_answer
from rag.notes.folders import Folder, map_folder_names, parse_folder_answer, resolve_user_folders
from rag.notes.format import (
    format_context,
    match_citations,
    parse_citations,
    section_label,
    snippet,
    strip_chunk_markers,
)
from rag.notes.settings import NotesSettings
from rag.types import Candidate


def cand(cid: int, path: str, heading: str, content: str, vault: str = "work") -> Candidate:
    return Candidate(chunk_id=cid, vault=vault, source_path=path, ordinal=cid, heading_path=heading,
                     content=content, metadata={})


CHUNKS = [
    cand(0, "projects/alpha.md", "# Alpha > ## Timeline", "Alpha ships in March."),
    cand(1, "projects/alpha.md", "# Alpha > ## Budget", "The budget is 40k."),
    cand(2, "meetings/2024-05-01.md", "", "We agreed to move the launch."),
]


def test_context_blocks_and_citation_instruction():
    text = format_context(CHUNKS[:2] + CHUNKS[2:])
    assert text.startswith("[Chunk 1]\n[Vault: work] File: projects/alpha.md\nSection: Alpha > Timeline\n"
                           "Content:\nAlpha ships in March.\n\n[Chunk 2]\n")
    assert "[Chunk 3]\n[Vault: work] File: meetings/2024-05-01.md\nSection: (top of the note)\n" in text
    assert text.rstrip().endswith("[File: filename.md, Section: section name], using the file name and section "
                                  "shown above.")


def test_section_label_strips_heading_markers():
    assert section_label("# A > ## B > ### C") == "A > B > C"
    assert section_label("") == ""


def test_parse_citations_tolerates_spacing_and_quotes():
    answer = ("Alpha ships in March [File: alpha.md, Section: Timeline]. Budget: 40k "
              "[file: 'projects/alpha.md' , section: Alpha > Budget] and [File: meetings/2024-05-01.md]")
    cites = parse_citations(answer)
    assert [(c.file, c.section) for c in cites] == [
        ("alpha.md", "Timeline"), ("projects/alpha.md", "Alpha > Budget"), ("meetings/2024-05-01.md", "")]


def test_citations_match_by_file_and_section():
    answer = ("[File: alpha.md, Section: Budget] [File: alpha, Section: Alpha > Timeline] "
              "[File: 2024-05-01.md, Section: none] [File: alpha.md, Section: Budget]")
    m = match_citations(parse_citations(answer), CHUNKS)
    assert m.used == [1, 0, 2] and m.unmatched == [] and m.by_file_only == []


def test_citation_with_unknown_file_is_ignored_and_noted():
    answer = "X [File: beta.md, Section: Timeline]. Y [File: alpha.md, Section: Timeline]."
    m = match_citations(parse_citations(answer), CHUNKS)
    assert m.used == [0]
    assert m.unmatched == ["[File: beta.md, Section: Timeline]"]
    assert m.debug()["unmatched_citations"] == ["[File: beta.md, Section: Timeline]"]


def test_citation_with_paraphrased_section_points_at_the_file():
    m = match_citations(parse_citations("[File: alpha.md, Section: Money matters]"), CHUNKS)
    assert m.used == [0, 1] and m.by_file_only == ["[File: alpha.md, Section: Money matters]"]


def test_strip_chunk_markers():
    assert strip_chunk_markers("[Chunk 2] Alpha ships in March [Chunk 1].") == "Alpha ships in March."


def test_extractive_answer_quotes_best_sentences_with_citations():
    chunks = [
        cand(0, "ops/backup.md", "# Backups > ## Keys",
             "# Keys\nBackup keys rotate every Monday. The office plant needs water. "
             "Old backup keys are destroyed after rotation."),
        cand(1, "ops/misc.md", "# Misc", "Lunch is at noon every day. Nobody likes Mondays."),
    ]
    answer, used = extractive_answer("When do backup keys rotate?", chunks, NotesSettings())
    lines = answer.splitlines()
    assert lines == [
        "Backup keys rotate every Monday. [File: backup.md, Section: Keys]",
        "Old backup keys are destroyed after rotation. [File: backup.md, Section: Keys]",
    ]
    assert used == [0]


def test_extractive_answer_masks_secrets_and_falls_back_to_first_sentence():
    chunks = [cand(0, "a.md", "", "The deploy token is api_key = sk-live-abcdefghijklmnop1234567890 for prod.")]
    answer, used = extractive_answer("zebra migration", chunks, NotesSettings())
    assert "sk-live-abcdefghijklmnop1234567890" not in answer and "REDACTED" in answer
    assert answer.endswith("[File: a.md, Section: (top of the note)]") and used == [0]


def test_snippet_starts_at_the_best_sentence_and_masks_secrets():
    text = ("Intro sentence here. Another sentence. Key AKIAIOSFODNN7EXAMPLE opens the backup "
            "server and must rotate. " + "tail " * 100)
    out = snippet(text, ["backup", "server", "rotate"], 80)
    assert out.startswith("… Key ") and "AKIAIOSFODNN7EXAMPLE" not in out and "REDACTED" in out
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


# -- extractive answers: readable sentences, weighting -------------------------------------------------

def test_markup_becomes_plain_text_but_inline_code_stays():
    from rag.notes.extractive import plain

    text = ("See [[Settings#Excluded files|Excluded files]], [[Embed files]] and [[#Aliases]] "
            "![[icon.svg#icon]]![alt](img.png) for **bold**, _italic_, ==marked== and [the site](https://x.org). "
            "Type `[[` twice; snake_case stays.\n> [!tip] Callouts read as text.")
    assert plain(text) == ("See Excluded files, Embed files and Aliases  for bold, italic, marked and the site. "
                           "Type `[[` twice; snake_case stays.\nCallouts read as text.")


def test_sentences_keep_lists_with_their_introduction_and_skip_headings_in_bold():
    from rag.notes.extractive import _sentences

    content = ("Obsidian supports the following file types:\n\n- **Markdown**: `.md`\n- **PDF**: `.pdf`\n\n"
               "**Why back up your data?**\n\nBackups protect your notes from loss.\n\n"
               "To link using an alias:\n\n```md\n[[Note|alias]]\n```\n\n- a stray item on its own line")
    assert _sentences(content) == [
        "Obsidian supports the following file types: Markdown: `.md`; PDF: `.pdf`.",
        "Backups protect your notes from loss.",  # the bold pseudo-heading is not a sentence
        "a stray item on its own line",            # the dangling introduction of a code block is dropped
    ]


def test_stems_match_inflections():
    from rag.notes.rerank import stem

    pairs = [("notes", "note"), ("linked", "link"), ("linking", "links"), ("created", "create"),
             ("libraries", "library"), ("shipped", "ships"), ("running", "run"), ("backing", "back")]
    assert all(stem(a) == stem(b) for a, b in pairs)
    assert stem("keys") == "key" and stem("status") == "status" and stem("access") == "access"


def test_a_word_found_in_every_passage_weighs_less():
    from rag.notes.extractive import term_weights

    chunks = [cand(0, "a.md", "", "Obsidian stores notes as files."),
              cand(1, "b.md", "", "Obsidian syncs your vault."),
              cand(2, "c.md", "", "Obsidian can publish a site.")]
    w = term_weights(["obsidian", "vault"], chunks)
    assert w["obsidian"] == pytest.approx(math.log(2)) and w["vault"] == pytest.approx(math.log(4))
    answer, used = extractive_answer("Where does Obsidian keep the vault?", chunks, NotesSettings())
    # "vault" (one passage) outweighs "obsidian" (all three): only b.md's sentence reaches half the best
    assert answer == "Obsidian syncs your vault. [File: b.md, Section: (top of the note)]" and used == [1]


def test_sentence_similarity_picks_an_answer_in_other_words():
    chunks = [cand(0, "f.md", "# Formats", "Obsidian supports the following file types: markdown and PDF. "
                                            "Obsidian formats dates in settings.")]
    lexical, _ = extractive_answer("Which formats can I open?", chunks, NotesSettings(extractive_max_sentences=1))
    assert lexical.startswith("Obsidian formats dates")

    def similarity(texts):  # the embedder's view: the first sentence answers the question
        return [0.9 if "file types" in t else 0.1 for t in texts]

    semantic, _ = extractive_answer("Which formats can I open?", chunks, NotesSettings(extractive_max_sentences=1),
                                    similarity=similarity)
    # "formats" and "open" weigh the same (log 2; "open" is in no passage): 0.5 * 0 + 0.5 * 0.9 = 0.45
    # for the list beats 0.5 * 1/2 + 0.5 * 0.1 = 0.30 for the sentence sharing the word "formats"
    assert semantic.startswith("Obsidian supports the following file types")


def test_sentences_of_weaker_passages_need_more():
    chunks = [cand(0, "a.md", "# A", "Backups run every night on the server."),
              cand(1, "b.md", "# B", "Backups keep seven copies.")]
    both, used = extractive_answer("How do backups work?", chunks, NotesSettings())
    assert used == [0, 1]
    scaled, used = extractive_answer("How do backups work?", chunks, NotesSettings(), passage_scores=[0.8, 0.35])
    assert used == [0] and scaled == "Backups run every night on the server. [File: a.md, Section: A]"


def test_plain_text_keeps_code_blocks_and_placeholders():
    from rag.notes.format import plain

    text = "Run with id=<command-id> <b>now</b>.\n```bash\nid=<command-id> [[y]] **z**\n```\nThen [[w]]."
    assert plain(text) == "Run with id=<command-id> now.\n```bash\nid=<command-id> [[y]] **z**\n```\nThen w."
    # search snippets read as plain text too
    assert snippet("See [[Command palette|the palette]] for **all** commands.", ["palette"], 80) == (
        "See the palette for all commands.")
