//! The folders of `src/` import only downwards (docs/DESIGN.md §1): the job is handed what runs
//! after a walk instead of importing it, and what the job uses never imports the job.

use std::path::Path;

/// Every `crate::<module>` path named in the Rust files under `src/<folder>`, with the file.
fn imports_of(folder: &str, module: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(folder);
    let needle = format!("crate::{module}");
    let mut found = Vec::new();
    let mut pending = vec![root];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(std::fs::read_dir(&path).unwrap().map(|entry| entry.unwrap().path()));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if code.contains(&format!("{needle}::")) || code.contains(&format!("{needle};")) {
                    found.push(format!("{}:{}: {}", path.display(), number + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_job_imports_nothing_above_it() {
    for above in ["audit", "http", "cli", "startup"] {
        let found = imports_of("jobs", above);
        assert!(found.is_empty(), "jobs/ imports {above}/: {found:#?}");
    }
}

#[test]
fn nothing_the_job_uses_imports_the_job() {
    for below in [
        "domain",
        "store",
        "lock",
        "settlement",
        "schedule",
        "clock",
        "alerts",
        "audit",
        "telemetry",
    ] {
        let found = imports_of(below, "jobs");
        assert!(found.is_empty(), "{below}/ imports jobs/: {found:#?}");
    }
}
