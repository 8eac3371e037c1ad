//! Layers point one way (issue 14, STYLE "Layout"): `main.rs` → commands → areas → `http` and
//! `jobs` → `db` → leaf utilities. This reads `src/` as text and fails when storage or the job
//! queue names `crate::http` or an area, or when `http` names an area, so the rule keeps
//! itself true as the code grows.

use std::path::{Path, PathBuf};

/// Imports that still point up, each to be removed by the change that moves it; a new one
/// fails the test, and so does one listed here that is gone (keep the list honest).
const KNOWN: &[(&str, &str)] = &[];

/// The `.rs` files under `dir`, recursively.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names `file` reaches through `crate::NAME`, outside comments.
fn crate_names(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut names = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (i, _) in code.match_indices("crate::") {
            let before = code[..i].chars().last();
            // `merchant_admin::` paths in doc examples and `$crate::` are not imports.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
        }
    }
    names
}

#[test]
fn layers_point_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // Areas: every folder of src/ but the shared layers.
    let areas: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| !["http", "db", "jobs", "events"].contains(&n.as_str()))
        .collect();
    assert!(areas.iter().any(|a| a == "orders"), "{areas:?}");
    let mut found = Vec::new();
    for (layer, forbidden_http) in [
        ("db", true),
        ("jobs", true),
        ("http", false),
        ("events", true),
    ] {
        let mut files = Vec::new();
        rust_files(&src.join(layer), &mut files);
        for file in files {
            let rel = file
                .strip_prefix(src.parent().unwrap())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            for name in crate_names(&file) {
                let up = (forbidden_http && name == "http") || areas.contains(&name);
                if up && !found.contains(&(rel.clone(), name.clone())) {
                    found.push((rel.clone(), name));
                }
            }
        }
    }
    let known: Vec<(String, String)> = KNOWN
        .iter()
        .map(|(f, n)| ((*f).to_owned(), (*n).to_owned()))
        .collect();
    let new: Vec<_> = found.iter().filter(|f| !known.contains(f)).collect();
    assert!(new.is_empty(), "imports that point up the layers: {new:?}");
    let gone: Vec<_> = known.iter().filter(|k| !found.contains(k)).collect();
    assert!(gone.is_empty(), "fixed, so remove from KNOWN: {gone:?}");
}

/// `http` handles requests and knows no table: SQL is written in `db` and the areas, behind
/// functions `http` runs on the database threads (issue 14).
#[test]
fn http_writes_no_sql() {
    const STORAGE: &[&str] = &[
        "query_row(",
        "prepare(",
        "prepare_cached(",
        "execute(",
        "db::exec(",
        "SELECT ",
        "INSERT ",
        "UPDATE ",
        "DELETE FROM",
    ];
    /// Files still to move, each removed by the change that moves it.
    const KNOWN: &[&str] = &[];
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("http"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(src.parent().unwrap())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let hits: Vec<&str> = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .flat_map(|code| STORAGE.iter().filter(move |s| code.contains(*s)))
            .copied()
            .collect();
        if !hits.is_empty() {
            found.push((rel, hits));
        }
    }
    let new: Vec<_> = found
        .iter()
        .filter(|(f, _)| !KNOWN.contains(&f.as_str()))
        .collect();
    assert!(new.is_empty(), "SQL inside src/http: {new:?}");
    let gone: Vec<_> = KNOWN
        .iter()
        .filter(|k| !found.iter().any(|(f, _)| f == *k))
        .collect();
    assert!(gone.is_empty(), "moved, so remove from KNOWN: {gone:?}");
}
