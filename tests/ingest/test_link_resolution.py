"""Link targets resolved as Obsidian resolves them: path, relative path, a unique name, an alias."""

from __future__ import annotations

from rag.ingest.link_resolution import LinkResolver, Resolution

PATHS = ["Home.md", "User interface/Ribbon.md", "User interface/Settings.md", "Plugins/Random note.md",
         "Projects/Three laws of motion.md", "A/Notes.md", "B/Notes.md", "B/Other.md", "Deep/x/Motion.md"]
RESOLVER = LinkResolver(PATHS, {"Home.md": ["Start page", "start"], "B/Other.md": ["start"]})


def test_a_unique_name_anywhere_in_the_vault() -> None:
    assert RESOLVER.resolve("Ribbon", "Plugins/Random note.md") == Resolution("User interface/Ribbon.md", "name")
    assert RESOLVER.resolve("ribbon.md", "Home.md") == Resolution("User interface/Ribbon.md", "name")


def test_a_path_from_the_root_or_from_the_linking_note() -> None:
    assert RESOLVER.resolve("Projects/Three laws of motion", "Home.md").reason == "path"
    assert RESOLVER.resolve("projects/three LAWS of motion.md", "Home.md").path == "Projects/Three laws of motion.md"
    assert RESOLVER.resolve("Settings.md", "User interface/Ribbon.md") == \
        Resolution("User interface/Settings.md", "relative")
    assert RESOLVER.resolve("x/Motion", "Home.md") == Resolution("Deep/x/Motion.md", "name")  # a path's end


def test_an_ambiguous_name_prefers_the_linking_notes_folder_else_stays_unresolved() -> None:
    assert RESOLVER.resolve("Notes", "B/Other.md") == Resolution("B/Notes.md", "relative")
    assert RESOLVER.resolve("Notes", "Home.md") == Resolution(None, "ambiguous")


def test_aliases_and_what_stays_unresolved() -> None:
    assert RESOLVER.resolve("Start page", "Plugins/Random note.md") == Resolution("Home.md", "alias")
    assert RESOLVER.resolve("start", "Plugins/Random note.md") == Resolution(None, "ambiguous")  # two notes
    assert RESOLVER.resolve("Nowhere", "Home.md") == Resolution(None, "missing")
    assert RESOLVER.resolve("", "Home.md") == Resolution("Home.md", "self")


def test_the_line_around_a_link_loses_its_markers_and_is_cut_around_the_link() -> None:
    from rag.ingest.links import line_around

    assert line_around("- [ ] Open the Ribbon. Then click.", "Ribbon", 100) == "Open the Ribbon. Then click."
    assert line_around("## The Ribbon", "Ribbon", 100) == "The Ribbon"
    long_line = "a " * 100 + "the Ribbon here " + "b " * 100
    cut = line_around(long_line, "Ribbon", 40)
    assert len(cut) <= 40 and "Ribbon" in cut
