//! Where the cache lives: `--cache-dir DIR`, else `WARDEN_CACHE_DIR`, else `[cache] dir`,
//! else `$XDG_CACHE_HOME/warden`, else `~/.cache/warden`.

use std::ffi::OsString;
use std::path::PathBuf;

/// The variable that names the cache directory.
pub(crate) const ENV_DIR: &str = "WARDEN_CACHE_DIR";

/// What decides the directory, gathered so the choice is a pure function.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    /// `--cache-dir`.
    pub flag: Option<PathBuf>,
    /// `WARDEN_CACHE_DIR`.
    pub env: Option<OsString>,
    /// `[cache] dir` (relative to the repository root).
    pub config: Option<PathBuf>,
    /// `XDG_CACHE_HOME`.
    pub xdg_cache_home: Option<OsString>,
    /// The home directory (for `~/.cache`).
    pub home: Option<PathBuf>,
}

/// No flag, variable, config key or home folder names a cache directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "no cache directory: HOME and XDG_CACHE_HOME are not set; pass --cache-dir DIR or set {env}",
    env = ENV_DIR
)]
pub struct NoCacheDir;

impl Sources {
    /// The flag and config given, the rest from this process's environment.
    pub fn from_env(flag: Option<PathBuf>, config: Option<PathBuf>) -> Sources {
        Sources {
            flag,
            env: std::env::var_os(ENV_DIR),
            config,
            xdg_cache_home: std::env::var_os("XDG_CACHE_HOME"),
            home: std::env::home_dir(),
        }
    }

    /// The cache directory, or why there is none.
    pub fn dir(&self) -> Result<PathBuf, NoCacheDir> {
        let set = |v: &Option<OsString>| v.clone().filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(d) = self.flag.clone().filter(|d| !d.as_os_str().is_empty()) {
            return Ok(d);
        }
        if let Some(d) = set(&self.env) {
            return Ok(d);
        }
        if let Some(d) = &self.config {
            return Ok(d.clone());
        }
        // The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored.
        if let Some(d) = set(&self.xdg_cache_home).filter(|d| d.is_absolute()) {
            return Ok(d.join("warden"));
        }
        match self.home.clone().filter(|h| !h.as_os_str().is_empty()) {
            Some(h) => Ok(h.join(".cache").join("warden")),
            None => Err(NoCacheDir),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Sources {
        Sources {
            flag: Some("/flag".into()),
            env: Some("/env".into()),
            config: Some("/config".into()),
            xdg_cache_home: Some("/xdg".into()),
            home: Some("/home/u".into()),
        }
    }

    #[test]
    fn precedence_flag_env_config_xdg_home() {
        let mut s = all();
        assert_eq!(s.dir().unwrap(), PathBuf::from("/flag"));
        s.flag = None;
        assert_eq!(s.dir().unwrap(), PathBuf::from("/env"));
        s.env = Some("".into());
        assert_eq!(s.dir().unwrap(), PathBuf::from("/config"));
        s.config = None;
        assert_eq!(s.dir().unwrap(), PathBuf::from("/xdg/warden"));
        s.xdg_cache_home = Some("relative/xdg".into());
        assert_eq!(s.dir().unwrap(), PathBuf::from("/home/u/.cache/warden"));
        s.home = None;
        let e = s.dir().unwrap_err().to_string();
        assert!(e.contains("--cache-dir") && e.contains(ENV_DIR), "{e}");
    }
}
