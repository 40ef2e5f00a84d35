//! Why a store did not open, naming the path.

use std::fmt;
use std::path::PathBuf;

use narad_store::StoreError;

/// The schemes [`crate::open`] knows.
pub const SCHEMES: &str = "redb:PATH, sqlite:PATH, postgres://USER@HOST/DB[?schema=NAME]";

/// Why [`crate::open`] or [`crate::open_existing`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenError {
    /// The URL is not one of [`SCHEMES`] (a bare path included: the
    /// backend is never guessed).
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// No file at `path` (or no directory to create it in).
    NotFound {
        /// The missing path.
        path: PathBuf,
    },
    /// Another process holds the redb file.
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The file exists but is not a store of `backend`.
    NotAStore {
        /// The file.
        path: PathBuf,
        /// `redb` or `sqlite`.
        backend: &'static str,
    },
    /// The file backend could not open the file at `path` for another
    /// reason (permissions, an I/O error): its code is the store error's.
    Unopenable {
        /// The file.
        path: PathBuf,
        /// What the backend reported.
        error: StoreError,
    },
    /// The backend failed otherwise (e.g. the PostgreSQL server).
    Store(StoreError),
}

impl OpenError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidUrl { .. } => "invalid_url",
            Self::NotFound { .. } => "not_found",
            Self::Locked { .. } => "locked",
            Self::NotAStore { .. } => "not_a_store",
            Self::Unopenable { error, .. } | Self::Store(error) => error.code(),
        }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUrl { url, why } => {
                write!(f, "store URL `{url}`: {why}; known schemes: {SCHEMES}")
            }
            Self::NotFound { path } => write!(f, "no store at {}", path.display()),
            Self::Locked { path } => write!(
                f,
                "{} is already open, in this process or another (a redb file \
                 has one owner); sqlite: or postgres:// let several share a store",
                path.display()
            ),
            Self::NotAStore { path, backend } => {
                write!(f, "{} is not a {backend} store", path.display())
            }
            Self::Unopenable { path, error } => {
                write!(f, "cannot open {}: {error}", path.display())
            }
            Self::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<OpenError> for StoreError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Store(e) => e,
            OpenError::Unopenable { path, error } => match error {
                StoreError::Backend(why) => {
                    StoreError::Backend(format!("cannot open {}: {why}", path.display()))
                }
                other => other,
            },
            OpenError::NotFound { path } => StoreError::NotFound {
                path: path.display().to_string(),
            },
            OpenError::NotAStore { path, .. } => StoreError::NotAStore {
                path: path.display().to_string(),
            },
            other => StoreError::Backend(other.to_string()),
        }
    }
}

/// Classifies a file backend's failure to open `path`.
#[cfg(any(feature = "redb", feature = "sqlite"))]
pub(crate) fn classify(path: &std::path::Path, backend: &'static str, e: StoreError) -> OpenError {
    if let StoreError::NotFound { .. } = e {
        return OpenError::NotFound {
            path: path.to_owned(),
        };
    }
    if let StoreError::NotAStore { .. } = e {
        return OpenError::NotAStore {
            path: path.to_owned(),
            backend,
        };
    }
    if let StoreError::Corrupt { .. } = e {
        // A file that is not a store at all, not a damaged store.
        let header: &[u8] = if backend == "sqlite" {
            b"SQLite format 3\0"
        } else {
            b"redb"
        };
        let mut head = vec![0u8; header.len()];
        let readable = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
            .is_ok();
        if !readable || head != header {
            return OpenError::NotAStore {
                path: path.to_owned(),
                backend,
            };
        }
        return OpenError::Store(e);
    }
    let text = e.to_string().to_ascii_lowercase();
    if text.contains("already open") || text.contains("lock") {
        return OpenError::Locked {
            path: path.to_owned(),
        };
    }
    if !path.exists() {
        let missing = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => dir.to_owned(),
            _ => path.to_owned(),
        };
        return OpenError::NotFound { path: missing };
    }
    if path.is_dir() {
        return OpenError::NotAStore {
            path: path.to_owned(),
            backend,
        };
    }
    if path.is_file()
        && (text.contains("not a database")
            || text.contains("corrupt")
            || text.contains("invalid")
            || text.contains("magic")
            || text.contains("unknown"))
    {
        return OpenError::NotAStore {
            path: path.to_owned(),
            backend,
        };
    }
    OpenError::Unopenable {
        path: path.to_owned(),
        error: e,
    }
}
