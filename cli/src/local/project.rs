//! The configuration `verify`, `config check` and `send` read, layered as
//! `npm start` layers it: the relay's `wrangler.toml` `[vars]` (of `--env`
//! when given), then the dotenv file beside it (`.dev.vars.<env>`, else
//! `.dev.vars`, else `.dev.vars.example`, whose values `wrangler dev`
//! reads over `[vars]`), then the environment: `SOURCES` and
//! `DESTINATIONS` (as `npm start -- --var` gives them) and every secret
//! (`WEBHOOK_SECRET_…`, `DESTINATION_SECRET_…`, …).

use crate::args::ConfigFiles;
use crate::failure::Failure;
use hookrelay_core::config::build_check::{env_vars, parse_dev_vars};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layered configuration, and where its parts came from.
pub struct Project {
    /// The relay's config file.
    pub relay_path: PathBuf,
    /// Its contents as JSON.
    pub relay: Value,
    /// The dotenv file read, if any.
    pub dev_vars: Option<PathBuf>,
    /// The effective vars and secrets.
    pub vars: BTreeMap<String, Value>,
    /// Where `SOURCES` and `DESTINATIONS` came from, in words.
    pub origin: BTreeMap<&'static str, String>,
}

/// The secrets the environment may give, by prefix (or whole name).
const SECRET_PREFIXES: [&str; 4] = [
    "WEBHOOK_SECRET_",
    "DESTINATION_SECRET_",
    "DESTINATION_SIGNING_SECRET_",
    "DOWNSTREAM_SIGNING_SECRET",
];

/// Reads and layers the configuration `files` names.
pub fn load(files: &ConfigFiles) -> Result<Project, Failure> {
    let relay = read_toml(&files.config)?;
    let dir = files
        .config
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let at = files.config.display().to_string();
    let mut vars = env_vars(&relay, files.env.as_deref()).map_err(|e| {
        Failure::usage(
            format!("{at} {e}"),
            "check --env against the [env.*] tables of the config",
        )
    })?;
    let mut origin = BTreeMap::new();
    for key in ["SOURCES", "DESTINATIONS"] {
        if vars.contains_key(key) {
            origin.insert(key, format!("{at} [vars]"));
        }
    }
    let dev_vars = dotenv_file(&dir, files.env.as_deref());
    if let Some(file) = &dev_vars {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Failure::usage(
                format!("cannot read {}: {e}", file.display()),
                "fix the file's permissions, or remove it",
            )
        })?;
        for (k, v) in parse_dev_vars(&text) {
            if let Some(o) = origin_key(&k) {
                origin.insert(o, file.display().to_string());
            }
            vars.insert(k, v);
        }
    }
    for (k, v) in std::env::vars() {
        let secret = SECRET_PREFIXES.iter().any(|p| k.starts_with(p));
        if let Some(o) = origin_key(&k) {
            origin.insert(o, "the environment".into());
        } else if !secret {
            continue;
        }
        vars.insert(k, Value::String(v));
    }
    Ok(Project {
        relay_path: files.config.clone(),
        relay,
        dev_vars,
        vars,
        origin,
    })
}

fn origin_key(name: &str) -> Option<&'static str> {
    match name {
        "SOURCES" => Some("SOURCES"),
        "DESTINATIONS" => Some("DESTINATIONS"),
        _ => None,
    }
}

/// The dotenv file beside the config, as `wrangler dev` picks it.
fn dotenv_file(dir: &Path, env: Option<&str>) -> Option<PathBuf> {
    let mut names: Vec<String> = env.map(|e| format!(".dev.vars.{e}")).into_iter().collect();
    names.extend([".dev.vars".to_string(), ".dev.vars.example".to_string()]);
    names.iter().map(|f| dir.join(f)).find(|p| p.is_file())
}

/// A TOML file as JSON, the form the checks read.
pub fn read_toml(path: &Path) -> Result<Value, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::usage(
            format!("cannot read {}: {e}", path.display()),
            "run from the project's folder, or name the relay's config with -c path/to/wrangler.toml",
        )
    })?;
    let table: toml::Value = toml::from_str(&text).map_err(|e| {
        Failure::failed(
            format!("{} is not valid TOML: {e}", path.display()),
            "fix the file where the parser points",
        )
    })?;
    serde_json::to_value(table)
        .map_err(|e| Failure::failed(format!("{}: {e}", path.display()), "fix the file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dotenv_file_is_the_environments_then_dev_vars_then_the_example() {
        let dir = std::env::temp_dir().join(format!("hookrelay-project-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(dotenv_file(&dir, None), None);
        std::fs::write(dir.join(".dev.vars.example"), "A=1").unwrap();
        assert_eq!(
            dotenv_file(&dir, Some("staging")),
            Some(dir.join(".dev.vars.example"))
        );
        std::fs::write(dir.join(".dev.vars"), "A=2").unwrap();
        assert_eq!(dotenv_file(&dir, None), Some(dir.join(".dev.vars")));
        std::fs::write(dir.join(".dev.vars.staging"), "A=3").unwrap();
        assert_eq!(
            dotenv_file(&dir, Some("staging")),
            Some(dir.join(".dev.vars.staging"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
