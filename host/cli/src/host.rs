//! The tool host the command line describes: the policy file read once, the host's own
//! files protected from tools, key-value store, tool store, hooks and tools loaded.

use crate::args::HostArgs;
use anyhow::{Context, Result, bail};
use hermetic::{LoadProblem, OperatorPolicy, Registry, RegistryOptions};

/// The tool host the options describe, and the policy file's `[server]` settings
/// (defaults without a policy file): the file is read once, for both. `redis_url`
/// (`serve --redis-url`) wins over the policy's `[cluster] redis_url`: key-value data
/// then lives in that Redis. `audit`: `serve --audit FILE`, a file of the host's like
/// the policy's own.
pub(crate) fn build_host(
    global: &HostArgs,
    redis_url: Option<&str>,
    audit: Option<&std::path::Path>,
) -> Result<(Registry, hermetic_config::ServerPolicy)> {
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let workspace = match &global.workspace {
        Some(dir) => {
            let resolved = dir
                .canonicalize()
                .with_context(|| format!("workspace {} does not exist", dir.display()))?;
            if !resolved.is_dir() {
                bail!("workspace {} is not a directory", dir.display());
            }
            Some(resolved)
        }
        None => None,
    };
    let (mut policy, secrets, mut state_files, server, trust, keyvalue_file, keyvalue_settings) =
        match &global.policy {
            Some(file) => {
                let loaded = hermetic_config::load(file, &cwd)?;
                (
                    loaded.policy,
                    loaded.secrets,
                    loaded.state_files,
                    loaded.server,
                    loaded.trust,
                    loaded.keyvalue_file,
                    loaded.keyvalue_settings,
                )
            }
            None => (
                {
                    // No policy: the terminal gets a sandbox when this machine has one.
                    let mut policy = OperatorPolicy::with_workspace(cwd.clone());
                    hermetic::policy::terminal::AUTO_BACKEND
                        .clone_into(&mut policy.terminal.default.backend);
                    policy
                },
                hermetic::Secrets::default(),
                Vec::new(),
                hermetic_config::ServerPolicy::default(),
                hermetic::policy::trust::TrustPolicy::default(),
                None,
                hermetic::KeyValueSettings::default(),
            ),
        };
    if let Some(dir) = workspace {
        policy.move_workspace(dir);
    }
    // --allow-env and --allow-net are the operator speaking.
    policy.allow_everywhere(&global.allow_env, &global.allow_net);
    // The terminal backends and approval gates, for tools granted the terminal.
    let mut options = RegistryOptions::new(policy);
    // Sandboxed commands never see the host's own files, even where their sandbox shows
    // the host read-only, and no command may name one (the gate's `self.host_state`).
    if let Some(cache) = &options.engine.cache_dir {
        options.policy.terminal.protected.push(cache.clone());
    }
    if let Some(file) = audit {
        options
            .policy
            .terminal
            .protected
            .push(std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf()));
    }
    // Tool directories: a component a command wrote there would be loaded (at the next
    // start, or at once by `serve`'s reload) with the grants the policy gives tools.
    for dir in &global.tools_dirs {
        options
            .policy
            .terminal
            .protected
            .push(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
    }
    // The program itself: a command that replaced it would run as the host next time.
    if let Ok(exe) = std::env::current_exe() {
        options.policy.terminal.programs.push(exe);
    }
    // Tools' key-value data: in the cluster's Redis, else in a file of this host's
    // (said where: the policy, HERMETIC_DATA_DIR; or the default place).
    let keyvalue_file = match redis_url.or(server.redis_url.as_deref()) {
        Some(url) => {
            options.keyvalue = Some(std::sync::Arc::new(
                hermetic_server::store::RedisKeyValue::new(url)?.with_settings(keyvalue_settings),
            ));
            None
        }
        None => keyvalue_file
            .map(|f| (f, true))
            .or_else(crate::state::default_keyvalue_file),
    };
    if let Some((file, _)) = &keyvalue_file {
        options.policy.terminal.protected.push(file.clone());
    }
    // The tool store, when the policy names tools by source.
    let store = if trust.sources.is_empty() {
        None
    } else {
        let dir = crate::community::store_dir(global.store.as_deref(), Some(&trust))?;
        options.policy.terminal.protected.push(dir.clone());
        Some(dir)
    };
    let mut options = hermetic_terminal::attach(options)?;
    if let Some((file, said)) = keyvalue_file {
        // The default place under tools' reach (hermetic run in one's home directory):
        // kept in memory instead, said so; a place the operator named is checked
        // like every other host file, and refused there.
        let reachable = hermetic::ToolReach::of(&options.policy)
            .check("the key-value store", &file)
            .is_err();
        if reachable && !said {
            eprintln!(
                "warning: tools' key-value data is kept in memory this time: {} is where tools reach (set [keyvalue] file or HERMETIC_DATA_DIR outside every mount)",
                file.display()
            );
        } else {
            if !state_files.iter().any(|f| f.path == file) {
                state_files.push(hermetic::StateFile {
                    what: "the key-value store".to_owned(),
                    path: file.clone(),
                });
            }
            options.keyvalue = Some(std::sync::Arc::new(
                hermetic::EmbeddedKeyValueFile::with_settings(file, keyvalue_settings),
            ));
        }
    }
    // Under require_signature, a component file (--tools-dir, reloads) must be signed
    // by a trusted key too: FILE.sig beside it.
    let signed = if trust.require_signature || !trust.tenants_requiring.is_empty() {
        Some(crate::community::file_check(&trust)?)
    } else {
        None
    };
    // A name the policy gives a source is that tool's: no file takes it.
    options.file_check = crate::community::reserve::file_check(&trust, signed);
    options.secrets = secrets;
    options
        .overrides
        .extend(global.allow_override.iter().cloned());
    if global.no_cache {
        options.engine.cache_dir = None;
    }
    let registry = Registry::new(options)?;
    let mut problems: Vec<LoadProblem> = Vec::new();
    // The policy's own files were checked against its mounts at load; `--workspace`
    // may have moved one over them.
    for file in &state_files {
        registry.check_state_path(&file.what, &file.path)?;
    }
    // Hooks before any call can run: one that cannot load stops the host.
    for hook in &registry.policy().hooks {
        let bytes = match &hook.location {
            hermetic::policy::hooks::HookLocation::Source(source) => {
                let dir = crate::community::store_dir(global.store.as_deref(), Some(&trust))?;
                let require = trust.require_signature || !trust.tenants_requiring.is_empty();
                // A hook from a source is named by the policy: there is one.
                let policy = global
                    .policy
                    .as_deref()
                    .unwrap_or(std::path::Path::new("FILE"));
                crate::community::hook_bytes(&hook.name, source, policy, &trust, &dir, require)?
            }
            _ => hermetic::hooks::bytes_of(hook)?.into_owned(),
        };
        registry.add_hook(hook, &bytes)?;
    }
    if !global.no_bundled {
        problems.extend(registry.add_bundled());
    }
    for dir in &global.tools_dirs {
        problems.extend(registry.add_dir(dir)?);
    }
    // After the bundled tools: one holding a name the policy gives a source is
    // skipped, so the community tool (loaded or not) keeps its name and grants.
    problems.extend(crate::community::reserve::release_source_names(
        &registry, &trust,
    ));
    if let (Some(dir), Some(policy_path)) = (&store, &global.policy) {
        registry.check_state_path("the tool store", dir)?;
        // A tool is signed or it is not: when any tenant requires signatures, every
        // tool from a source must be signed (tools are shared by the tenants a server
        // serves).
        let require = trust.require_signature
            || !trust.tenants_requiring.is_empty()
            || trust.requires_signature(global.tenant());
        problems.extend(crate::community::load_sources(
            &registry,
            policy_path,
            &trust,
            dir,
            require,
            global.strict || trust.strict,
        )?);
    }
    for problem in &problems {
        eprintln!("warning: skipped {}: {}", problem.source, problem.reason);
    }
    registry.check_tenant(global.tenant())?;
    registry.check_tenant_toolsets()?;
    Ok((registry, server))
}

/// The tool host the options describe. See [`build_host`].
pub(crate) fn build_registry(global: &HostArgs) -> Result<Registry> {
    Ok(build_host(global, None, None)?.0)
}

/// The `[trust]` settings and sources of `--policy`, when one is given.
pub(crate) fn trust_of(host: &HostArgs) -> Result<Option<hermetic::policy::trust::TrustPolicy>> {
    let Some(file) = &host.policy else {
        return Ok(None);
    };
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    Ok(Some(hermetic_config::load(file, &cwd)?.trust))
}
