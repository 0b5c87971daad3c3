//! Reading a contract and its companion files from a folder: the IO warrant-core refuses.

use std::path::{Path, PathBuf};

use warrant_core::Contract;
use warrant_core::contract::ContractFiles;

use crate::EngineError;

/// Files relative to the contract's folder. A path may not leave the folder.
#[derive(Debug, Clone)]
pub struct FolderFiles {
    folder: PathBuf,
}

impl FolderFiles {
    /// Files under `folder`.
    pub fn new(folder: &Path) -> FolderFiles {
        FolderFiles { folder: folder.to_owned() }
    }
}

impl ContractFiles for FolderFiles {
    fn read(&self, path: &str) -> Result<String, String> {
        let relative = Path::new(path);
        if relative.is_absolute() || relative.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return Err("the path must stay inside the contract's folder".into());
        }
        std::fs::read_to_string(self.folder.join(relative)).map_err(|e| e.to_string())
    }
}

/// Loads the contract at `path` with its policy files; returns it with its folder.
pub fn load_contract(path: &Path) -> Result<(Contract, PathBuf), EngineError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| EngineError::File { path: path.display().to_string(), message: e.to_string() })?;
    let folder = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let contract = Contract::load(&path.display().to_string(), &text, &FolderFiles::new(&folder))?;
    Ok((contract, folder))
}
