//! ARCHITECTURE.md stays a page a newcomer reads, and true: every path it names exists, every cell of its table
//! fits in two lines, and the page fits on one screenful of a printed page.

use std::path::Path;

/// The page's longest allowed length, in lines.
const PAGE_LINES: usize = 80;
/// A table cell's longest allowed length: two lines of the page's 120-character width.
const CELL_CHARS: usize = 240;
/// What a named file ends with; a name with a `/` is a path whatever it ends with.
const FILE_ENDINGS: [&str; 9] = [
    ".rs", ".md", ".toml", ".yml", ".py", ".html", ".js", ".css", ".sql",
];

fn page() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the repository's root")
}

/// The `code spans` of `text` that name a file or folder: a `/` in them (not a route, which starts with one, nor a
/// Rust path) or a file ending; `a, b` inside one span are two names.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| span.split(", "))
        .map(str::trim)
        .filter(|name| !name.starts_with('/') && !name.contains("::") && !name.contains(' '))
        .filter(|name| name.contains('/') || FILE_ENDINGS.iter().any(|end| name.ends_with(end)))
        .map(str::to_owned)
        .collect()
}

/// The table's rows: the folder cell and the cell of what it holds.
fn table_rows(page: &str) -> Vec<(String, String)> {
    page.lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 2, "a row of two cells: {line}");
            (cells[0].trim().to_owned(), cells[1].trim().to_owned())
        })
        .collect()
}

/// Which of `names` exist neither under one of `bases` nor at the root.
fn missing(root: &Path, bases: &[String], names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|name| {
            !root.join(name).exists()
                && !bases.iter().any(|base| root.join(base).join(name).exists())
        })
        .cloned()
        .collect()
}

#[test]
fn every_path_the_page_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = page();
    let mut not_there = Vec::new();
    for (folder, holds) in table_rows(&page) {
        let folders = named_paths(&folder);
        assert!(
            !folders.is_empty(),
            "the row's first cell names a path: {folder}"
        );
        not_there.extend(missing(root, &[], &folders));
        let bases: Vec<String> = folders
            .iter()
            .filter(|f| f.ends_with('/'))
            .cloned()
            .collect();
        not_there.extend(missing(root, &bases, &named_paths(&holds)));
    }
    let prose: String = page
        .lines()
        .filter(|line| !line.starts_with('|') && !line.starts_with(' '))
        .collect::<Vec<_>>()
        .join("\n");
    not_there.extend(missing(root, &[], &named_paths(&prose)));
    assert!(
        not_there.is_empty(),
        "named in ARCHITECTURE.md but not in the repository: {not_there:?}"
    );
}

#[test]
fn the_page_is_one_page_and_every_cell_fits_in_two_lines() {
    let page = page();
    let lines = page.lines().count();
    assert!(
        lines <= PAGE_LINES,
        "ARCHITECTURE.md has {lines} lines, at most {PAGE_LINES}"
    );
    let rows = table_rows(&page);
    assert!(
        rows.len() >= 10,
        "the where-to-find-what table has its rows"
    );
    for (folder, holds) in rows {
        for cell in [&folder, &holds] {
            let length = cell.chars().count();
            assert!(
                length <= CELL_CHARS,
                "a cell of {length} characters (at most {CELL_CHARS}): {cell}"
            );
        }
    }
}

#[test]
fn the_path_reader_finds_names_and_leaves_routes_and_types_alone() {
    let names = named_paths(
        "`a/b.rs`, `x.md, y.toml`, `/api/tune`, `breaker::sim`, `ServiceId`, `tolerant agent`",
    );
    assert_eq!(names, ["a/b.rs", "x.md", "y.toml"]);
    let rows = table_rows("| path | holds |\n|---|---|\n| `a/` | `b.rs` and more |\n");
    assert_eq!(rows, [("`a/`".to_owned(), "`b.rs` and more".to_owned())]);
}
