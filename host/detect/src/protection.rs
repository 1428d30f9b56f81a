//! What of the agent host the detector protects, compiled from its configuration: the
//! analysis holds this, not the whole detector, so the walk does not depend on the
//! detector that runs it.

/// The host's own program names and the directories of its (and other agents')
/// configuration.
#[derive(Debug, Clone)]
pub(crate) struct SelfProtection {
    /// Lower-case names of the agent host's programs, services and modules.
    pub(crate) self_names: Vec<String>,
    /// Lower-case names its processes may be killed by: the self names and the
    /// configured process names.
    pub(crate) process_names: Vec<String>,
    /// Path components whose files are protected like the host's configuration.
    pub(crate) agent_dirs: Vec<String>,
    /// The host's own files and programs, and whether the host user's credentials
    /// are in reach.
    pub(crate) host: super::host_paths::HostPaths,
}
