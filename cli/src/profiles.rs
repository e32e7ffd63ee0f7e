//! Stored logins: one file, `config.toml`, in `$HOOKRELAY_CONFIG` or else
//! `$XDG_CONFIG_HOME/hookrelay/` (the platform's configuration directory
//! when XDG_CONFIG_HOME is unset), holding a URL and a token per profile
//! (`production`, `staging`, …). The file is readable by its owner only:
//! written with mode 0600 in a 0700 directory, and refused when anyone
//! else may read it, as ssh refuses a private key.

use crate::failure::Failure;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One stored login.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The relay's origin.
    pub url: String,
    /// Its token (never printed).
    pub token: String,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
}

/// The stored logins, and where they live.
pub struct Store {
    /// The file (it may not exist yet).
    pub path: PathBuf,
    file: File,
}

/// The configuration directory.
pub fn config_dir() -> Result<PathBuf, Failure> {
    if let Some(dir) = std::env::var_os("HOOKRELAY_CONFIG").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(xdg).join("hookrelay"));
    }
    dirs::config_dir().map(|d| d.join("hookrelay")).ok_or_else(|| {
        Failure::usage(
            "cannot tell where to keep logins: no HOOKRELAY_CONFIG, XDG_CONFIG_HOME or home directory",
            "set HOOKRELAY_CONFIG to a directory of your own",
        )
    })
}

impl Store {
    /// The stored logins (none when the file does not exist yet).
    pub fn load() -> Result<Store, Failure> {
        let path = config_dir()?.join("config.toml");
        if !path.exists() {
            return Ok(Store {
                path,
                file: File::default(),
            });
        }
        owner_only(&path)?;
        let text = std::fs::read_to_string(&path).map_err(|e| unreadable(&path, &e.to_string()))?;
        let file = toml::from_str(&text).map_err(|e| unreadable(&path, &e.to_string()))?;
        Ok(Store { path, file })
    }

    /// The profile named `name`.
    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.file.profiles.get(name)
    }

    /// Keeps `profile` as `name` and writes the file, owner-only.
    pub fn save(&mut self, name: &str, profile: Profile) -> Result<(), Failure> {
        self.file.profiles.insert(name.to_string(), profile);
        let text = toml::to_string(&self.file).expect("profiles serialize");
        write_private(&self.path, &text).map_err(|e| {
            Failure::failed(
                format!("cannot write {}: {e}", self.path.display()),
                "check that the directory is yours and writable, or set HOOKRELAY_CONFIG to one that is",
            )
        })
    }
}

fn unreadable(path: &Path, why: &str) -> Failure {
    Failure::usage(
        format!("cannot read the stored logins {}: {why}", path.display()),
        "fix the file, or remove it and log in again with `hookrelay login`",
    )
}

/// Refuses a logins file that someone other than its owner may read.
#[cfg(unix)]
fn owner_only(path: &Path) -> Result<(), Failure> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| unreadable(path, &e.to_string()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(Failure::usage(
            format!(
                "{} holds tokens but others may read it (mode {:o})",
                path.display(),
                mode & 0o777
            ),
            format!("make it yours alone: chmod 600 {}", path.display()),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn owner_only(_: &Path) -> Result<(), Failure> {
    Ok(())
}

/// Writes `text` to `path` through a temporary file created owner-only,
/// then renamed over it, so no reader ever sees a partial or open file.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let tmp = dir.join(".config.toml.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_written_owner_only_and_read_back() {
        let dir = std::env::temp_dir().join(format!("hookrelay-profiles-{}", std::process::id()));
        let path = dir.join("nested").join("config.toml");
        let mut store = Store {
            path: path.clone(),
            file: File::default(),
        };
        let profile = Profile {
            url: "https://relay.example".into(),
            token: "t0ken".into(),
        };
        store.save("staging", profile).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            assert!(owner_only(&path).is_ok());
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = owner_only(&path).unwrap_err();
            assert!(err.next.contains("chmod 600"), "{}", err.next);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let file: File = toml::from_str(&text).unwrap();
        assert_eq!(file.profiles["staging"].url, "https://relay.example");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
