//! Register operations: one value per key, read / write / compare-and-set.

use serde::{Deserialize, Serialize};

/// An operation on the register at `key`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum RegisterOperation {
    /// Read the value.
    Read {
        /// Register name.
        key: String,
    },
    /// Overwrite the value.
    Write {
        /// Register name.
        key: String,
        /// New value.
        value: String,
    },
    /// Set to `new` if the value is `expected`.
    Cas {
        /// Register name.
        key: String,
        /// Required current value.
        expected: String,
        /// New value.
        new: String,
    },
}

impl RegisterOperation {
    /// The register this operation touches.
    pub fn key(&self) -> &str {
        match self {
            RegisterOperation::Read { key }
            | RegisterOperation::Write { key, .. }
            | RegisterOperation::Cas { key, .. } => key,
        }
    }
}

/// A register response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "snake_case")]
pub enum RegisterResponse {
    /// The value read; `None` if never written.
    Read {
        /// The value.
        value: Option<String>,
    },
    /// The write took effect.
    Written,
    /// The compare-and-set matched and took effect.
    Swapped,
}

/// A register failure (the operation did not take effect).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegisterError {
    /// The compare-and-set did not match.
    CasMismatch,
}
