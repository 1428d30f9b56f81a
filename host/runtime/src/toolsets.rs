//! Named tool groups ("toolsets") and their resolution to tool names.
//!
//! Mirrors Hermes's `toolsets.py` (static `TOOLSETS` dict, `get_toolset`,
//! `resolve_toolset`, `validate_toolset`, `get_toolset_names`) and the
//! toolset-filtering half of `model_tools.py::get_tool_definitions`
//! (enabled list first, legacy `*_tools` names, disabled list subtracted last).
//!
//! The module is pure: the live registry is passed in as data ([`Members`]:
//! toolset name → tools registered in it), and problems are returned as
//! warnings instead of being logged, so the caller decides how loudly to
//! report them. Resolution yields tool *names*; like Hermes (whose
//! `registry.get_definitions` filters the resolved set), the caller still has
//! to intersect the result with the tools that actually exist.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Registry membership: toolset name → names of the tools registered in it.
///
/// Passed in rather than owned so toolsets stay a pure function of the static
/// definitions plus whatever the registry holds at call time (Hermes re-reads
/// its registry on every resolution for the same reason).
pub type Members = BTreeMap<String, BTreeSet<String>>;

/// The names that select every tool, as in Hermes's `resolve_toolset`.
const ALL_NAMES: [&str; 2] = ["all", "*"];

/// Hermes's `_LEGACY_TOOLSET_MAP` (model_tools.py): old `*_tools` names that
/// configs written for earlier Hermes versions still use. They map straight to
/// tool names (not toolsets), are only consulted when a name is not a known
/// toolset, and cannot be included by other toolsets — exactly as in Hermes.
pub const LEGACY_TOOLSETS: &[(&str, &[&str])] = &[
    ("web_tools", &["web_search", "web_extract"]),
    ("terminal_tools", &["terminal"]),
    ("vision_tools", &["vision_analyze"]),
    ("image_tools", &["image_generate"]),
    (
        "skills_tools",
        &["skills_list", "skill_view", "skill_manage"],
    ),
    (
        "browser_tools",
        &[
            "browser_navigate",
            "browser_snapshot",
            "browser_click",
            "browser_type",
            "browser_scroll",
            "browser_back",
            "browser_press",
            "browser_get_images",
            "browser_vision",
            "browser_console",
        ],
    ),
    ("cronjob_tools", &["cronjob_manage"]),
    (
        "file_tools",
        &["read_file", "write_file", "patch", "search_files"],
    ),
    ("tts_tools", &["text_to_speech"]),
];

/// The tool names a legacy `*_tools` name stands for, or `None` if `name` is
/// not a legacy name.
pub fn legacy_tools(name: &str) -> Option<&'static [&'static str]> {
    LEGACY_TOOLSETS
        .iter()
        .find(|(legacy, _)| *legacy == name)
        .map(|(_, tools)| *tools)
}

/// One toolset definition, shaped like a Hermes `TOOLSETS` entry so operators
/// can declare their own in TOML with the same vocabulary.
///
/// Unknown fields are rejected so a typo such as `include = [...]` fails
/// loudly at load time instead of silently producing an empty toolset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsetDef {
    /// Human-readable summary shown when listing toolsets.
    pub description: String,
    /// Tool names that belong to this toolset directly.
    pub tools: Vec<String>,
    /// Other toolsets whose tools are folded in (recursively).
    pub includes: Vec<String>,
}

impl ToolsetDef {
    /// Convenience constructor for the built-in table and for tests.
    pub fn new(description: &str, tools: &[&str], includes: &[&str]) -> Self {
        Self {
            description: description.to_owned(),
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            includes: includes.iter().map(|i| (*i).to_owned()).collect(),
        }
    }
}

/// Outcome of resolving or selecting toolsets.
///
/// Warnings are data rather than log lines so the module stays pure and the
/// caller can surface them wherever it reports configuration problems.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// The resolved tool names (sorted, deduplicated).
    pub tools: BTreeSet<String>,
    /// Human-readable problems met on the way (unknown names); never fatal.
    pub warnings: Vec<String>,
}

/// The static toolset table (built-in plus operator-defined).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toolsets {
    defs: BTreeMap<String, ToolsetDef>,
}

impl Toolsets {
    /// An empty table: only registry-derived toolsets (and `all`/`*`) exist.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in toolsets, modelled on Hermes's `TOOLSETS` dict.
    ///
    /// Only the groups that make sense for a sandboxed tool host are kept:
    /// the agent-loop tools that need the agent itself (`session_search`, `clarify`,
    /// `delegation`) — `todo` and `memory` are kept: here they are bundled tools on the
    /// key-value store —, desktop/GUI affordances, single-platform integrations
    /// (discord, feishu, yuanbao, spotify, kanban) and the `hermes-*`
    /// platform bundles are left out. Names, tools and descriptions follow
    /// Hermes so configs written for Hermes resolve the same way here.
    /// Tools declared by guests join these (or new) toolsets through the
    /// registry membership passed to [`Toolsets::resolve`].
    pub fn builtin() -> Self {
        let mut t = Self::new();
        let mut add = |name: &str, def: ToolsetDef| {
            t.insert(name, def);
        };
        add(
            "web",
            ToolsetDef::new(
                "Web research and content extraction tools",
                &["web_search", "web_extract"],
                &[],
            ),
        );
        add(
            "search",
            ToolsetDef::new(
                "Web search only (no content extraction/scraping)",
                &["web_search"],
                &[],
            ),
        );
        add(
            "todo",
            ToolsetDef::new(
                "Task planning and tracking for multi-step work",
                &["todo"],
                &[],
            ),
        );
        add(
            "memory",
            ToolsetDef::new(
                "Persistent memory across sessions (personal notes + user profile)",
                &["memory"],
                &[],
            ),
        );
        add(
            "vision",
            ToolsetDef::new("Image analysis and vision tools", &["vision_analyze"], &[]),
        );
        add(
            "image_gen",
            ToolsetDef::new(
                "Creative generation tools (images)",
                &["image_generate"],
                &[],
            ),
        );
        add(
            "terminal",
            ToolsetDef::new(
                "Terminal/command execution and process management tools",
                &["terminal", "process_manage"],
                &[],
            ),
        );
        add(
            "skills",
            ToolsetDef::new(
                "Access, create, edit, and manage skill documents with specialized \
                 instructions and knowledge",
                &["skills_list", "skill_view", "skill_manage"],
                &[],
            ),
        );
        // Like Hermes, web_search is deliberately NOT part of `browser`: disabled
        // toolsets are a strict subtraction, so listing it here would let
        // `disabled: [browser]` strip web search from every session.
        add(
            "browser",
            ToolsetDef::new(
                "Browser automation for web interaction (navigate, click, type, scroll, \
                 iframes, hold-click)",
                &[
                    "browser_navigate",
                    "browser_snapshot",
                    "browser_click",
                    "browser_type",
                    "browser_scroll",
                    "browser_back",
                    "browser_press",
                    "browser_get_images",
                    "browser_vision",
                    "browser_console",
                    "browser_cdp",
                    "browser_dialog",
                    "browser_exec",
                ],
                &[],
            ),
        );
        add(
            "cronjob",
            ToolsetDef::new(
                "Cronjob management tool - create, list, update, pause, resume, remove, \
                 and trigger scheduled tasks",
                &["cronjob_manage"],
                &[],
            ),
        );
        add(
            "file",
            ToolsetDef::new(
                // Hermes says "patch (with fuzzy matching)"; ours matches exactly.
                "File manipulation tools: read, write, patch (exact find-and-replace), and \
                 search (content + files)",
                &["read_file", "write_file", "patch", "search_files"],
                &[],
            ),
        );
        add(
            "tts",
            ToolsetDef::new(
                "Text-to-speech: convert text to audio",
                &["text_to_speech"],
                &[],
            ),
        );
        add(
            "code_execution",
            ToolsetDef::new(
                "Run Python scripts that call tools programmatically (reduces LLM round trips)",
                &["execute_code"],
                &[],
            ),
        );
        add(
            "homeassistant",
            ToolsetDef::new(
                "Home Assistant smart home control and monitoring",
                &[
                    "ha_list_entities",
                    "ha_get_state",
                    "ha_list_services",
                    "ha_call_service",
                ],
                &[],
            ),
        );
        // Hermes's scenario-specific composites.
        add(
            "debugging",
            ToolsetDef::new(
                "Debugging and troubleshooting toolkit",
                &["terminal", "process_manage"],
                &["web", "file"],
            ),
        );
        add(
            "safe",
            ToolsetDef::new(
                "Safe toolkit without terminal access",
                &[],
                &["web", "vision", "image_gen"],
            ),
        );
        t
    }

    /// Adds or replaces a static toolset, returning the previous definition.
    ///
    /// Mirrors Hermes's `create_custom_toolset`. A definition named `all` or
    /// `*` is stored but never consulted, because those names always mean
    /// "every tool" (Hermes checks them before looking anything up).
    pub fn insert(&mut self, name: impl Into<String>, def: ToolsetDef) -> Option<ToolsetDef> {
        self.defs.insert(name.into(), def)
    }

    /// The static definition alone (no registry merge), as Hermes's
    /// `get_toolset(name, include_registry=False)`.
    pub fn get_static(&self, name: &str) -> Option<&ToolsetDef> {
        self.defs.get(name)
    }

    /// The merged view of one toolset, as Hermes's `get_toolset(name)`:
    /// a static entry gets its registry members unioned into `tools` (sorted,
    /// deduplicated); a registry-only toolset is synthesised with no includes;
    /// anything else (including `all`/`*`) is `None`.
    pub fn get(&self, name: &str, members: &Members) -> Option<ToolsetDef> {
        let registered = members.get(name);
        match self.defs.get(name) {
            Some(def) => {
                let mut tools: BTreeSet<&String> = def.tools.iter().collect();
                tools.extend(registered.into_iter().flatten());
                Some(ToolsetDef {
                    description: def.description.clone(),
                    tools: tools.into_iter().cloned().collect(),
                    includes: def.includes.clone(),
                })
            }
            None => registered.map(|tools| ToolsetDef {
                description: plugin_description(name),
                tools: tools.iter().cloned().collect(),
                includes: Vec::new(),
            }),
        }
    }

    /// A toolset's description, or `None` if the name is not a toolset.
    pub fn description(&self, name: &str, members: &Members) -> Option<String> {
        match self.defs.get(name) {
            Some(def) => Some(def.description.clone()),
            None => members.contains_key(name).then(|| plugin_description(name)),
        }
    }

    /// Whether `name` is a toolset (`all`/`*`, static, or registry-derived),
    /// as Hermes's `validate_toolset`. Legacy `*_tools` names are not
    /// toolsets; [`Toolsets::select`] handles them separately.
    pub fn is_known(&self, name: &str, members: &Members) -> bool {
        is_all(name) || self.defs.contains_key(name) || members.contains_key(name)
    }

    /// Every known toolset name (static ∪ registry), sorted; `all`/`*` are
    /// not listed, as in Hermes's `get_toolset_names`.
    pub fn names(&self, members: &Members) -> Vec<String> {
        let names: BTreeSet<&String> = self.defs.keys().chain(members.keys()).collect();
        names.into_iter().cloned().collect()
    }

    /// Resolves one toolset name to tool names, following `includes`.
    ///
    /// Mirrors Hermes's `resolve_toolset(name, visited)`: a toolset's tools
    /// are its static tools ∪ its registry members ∪ its includes' tools; a
    /// name already visited in this resolution resolves to nothing (so
    /// cycles, self-includes and diamonds terminate without error); `all` and
    /// `*` mean every tool. An unknown name resolves to nothing, and — unlike
    /// Hermes, which is silent here — is reported as a warning so a typo in
    /// an operator's `includes` does not go unnoticed.
    pub fn resolve(&self, name: &str, members: &Members) -> Resolution {
        let mut out = Resolution::default();
        let mut visited = BTreeSet::new();
        self.resolve_into(name, members, &mut visited, &mut out);
        out
    }

    /// Chooses the session's tools from enabled/disabled toolset lists.
    ///
    /// Mirrors Hermes's `get_tool_definitions` filtering: with `enabled =
    /// None` every tool is selected; otherwise each enabled name is resolved
    /// as a toolset if it is one, else as a legacy `*_tools` name, else
    /// reported as unknown. The disabled list is applied LAST, as a strict
    /// subtraction, so a tool in a disabled toolset is removed even when a
    /// composite re-enables it (Hermes #17309).
    pub fn select(
        &self,
        enabled: Option<&[String]>,
        disabled: &[String],
        members: &Members,
    ) -> Resolution {
        let mut out = Resolution::default();
        match enabled {
            None => out.tools = self.every_tool(members),
            Some(names) => {
                for name in names {
                    if let Some(part) = self.resolve_selection(name, members, &mut out.warnings) {
                        out.tools.extend(part);
                    }
                }
            }
        }
        for name in disabled {
            if let Some(part) = self.resolve_selection(name, members, &mut out.warnings) {
                for tool in &part {
                    out.tools.remove(tool);
                }
            }
        }
        out
    }

    /// One entry of an enabled/disabled list: toolset first, then legacy
    /// name, else an "unknown" warning — Hermes's precedence.
    fn resolve_selection(
        &self,
        name: &str,
        members: &Members,
        warnings: &mut Vec<String>,
    ) -> Option<BTreeSet<String>> {
        if self.is_known(name, members) {
            let resolved = self.resolve(name, members);
            warnings.extend(resolved.warnings);
            Some(resolved.tools)
        } else if let Some(tools) = legacy_tools(name) {
            Some(tools.iter().map(|t| (*t).to_owned()).collect())
        } else {
            warnings.push(format!("Unknown toolset: {name}"));
            None
        }
    }

    /// Depth-first expansion with one shared `visited` set per resolution.
    ///
    /// Iterative (explicit stack) so an operator-defined include chain of any
    /// depth cannot exhaust the call stack. Includes are pushed in reverse so
    /// they are visited in declaration order, which keeps warnings ordered
    /// the way the config reads.
    fn resolve_into(
        &self,
        root: &str,
        members: &Members,
        visited: &mut BTreeSet<String>,
        out: &mut Resolution,
    ) {
        // (name, the toolset that included it — for the warning text)
        let mut stack: Vec<(&str, Option<&str>)> = vec![(root, None)];
        while let Some((name, parent)) = stack.pop() {
            if is_all(name) {
                // Hermes unions the resolution of every toolset here; since
                // every toolset's own tools end up in that union, it equals
                // the flat union below, which avoids re-resolving the whole
                // table once per toolset that includes `all`.
                out.tools.extend(self.every_tool(members));
                continue;
            }
            // Diamond or cycle: the tools were (or are being) collected
            // through another path, so this visit contributes nothing.
            if !visited.insert(name.to_owned()) {
                continue;
            }
            let def = self.defs.get(name);
            let registered = members.get(name);
            if def.is_none() && registered.is_none() {
                out.warnings.push(match parent {
                    None => format!("Unknown toolset: {name}"),
                    Some(parent) => {
                        format!("Toolset '{parent}' includes unknown toolset '{name}'")
                    }
                });
                continue;
            }
            if let Some(registered) = registered {
                out.tools.extend(registered.iter().cloned());
            }
            if let Some(def) = def {
                out.tools.extend(def.tools.iter().cloned());
                for include in def.includes.iter().rev() {
                    stack.push((include.as_str(), Some(name)));
                }
            }
        }
    }

    /// Every tool any toolset can name: all static tools ∪ all registry
    /// members (what `all`/`*` and "no enabled list" mean).
    fn every_tool(&self, members: &Members) -> BTreeSet<String> {
        self.defs
            .values()
            .flat_map(|def| def.tools.iter())
            .chain(members.values().flatten())
            .cloned()
            .collect()
    }
}

/// Whether `name` means "every tool".
fn is_all(name: &str) -> bool {
    ALL_NAMES.contains(&name)
}

/// The description Hermes gives a toolset that exists only in the registry.
fn plugin_description(name: &str) -> String {
    format!("Plugin toolset: {name}")
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail loudly by design"
)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn members(entries: &[(&str, &[&str])]) -> Members {
        entries
            .iter()
            .map(|(name, tools)| ((*name).to_owned(), set(tools)))
            .collect()
    }

    fn table(entries: &[(&str, &[&str], &[&str])]) -> Toolsets {
        let mut t = Toolsets::new();
        for (name, tools, includes) in entries {
            t.insert(*name, ToolsetDef::new("", tools, includes));
        }
        t
    }

    #[test]
    fn cycle_terminates_with_both_sides() {
        let t = table(&[("a", &["ta"], &["b"]), ("b", &["tb"], &["a"])]);
        let r = t.resolve("a", &Members::new());
        assert_eq!(r.tools, set(&["ta", "tb"]));
        assert!(
            r.warnings.is_empty(),
            "a repeat is not an error: {:?}",
            r.warnings
        );
        assert_eq!(t.resolve("b", &Members::new()).tools, set(&["ta", "tb"]));
    }

    #[test]
    fn self_include_is_harmless() {
        let t = table(&[("a", &["ta"], &["a", "a"])]);
        let r = t.resolve("a", &Members::new());
        assert_eq!(r.tools, set(&["ta"]));
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn diamond_collects_shared_leaf_once_without_warnings() {
        let t = table(&[
            ("a", &["ta"], &["b", "c"]),
            ("b", &["tb"], &["d"]),
            ("c", &["tc"], &["d"]),
            ("d", &["td"], &["missing"]),
        ]);
        let r = t.resolve("a", &Members::new());
        assert_eq!(r.tools, set(&["ta", "tb", "tc", "td"]));
        // d is expanded once, so its broken include is reported once.
        assert_eq!(
            r.warnings,
            vec!["Toolset 'd' includes unknown toolset 'missing'".to_owned()]
        );
    }

    #[test]
    fn unknown_name_resolves_to_nothing_with_warning() {
        let t = Toolsets::builtin();
        let r = t.resolve("nope", &Members::new());
        assert!(r.tools.is_empty());
        assert_eq!(r.warnings, vec!["Unknown toolset: nope".to_owned()]);
    }

    #[test]
    fn unknown_include_keeps_the_rest() {
        let t = table(&[("a", &["ta"], &["ghost", "b"]), ("b", &["tb"], &[])]);
        let r = t.resolve("a", &Members::new());
        assert_eq!(r.tools, set(&["ta", "tb"]));
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].contains("'ghost'"));
    }

    #[test]
    fn all_and_star_mean_every_static_and_registered_tool() {
        let t = table(&[("a", &["ta"], &["b"]), ("b", &["tb"], &[])]);
        let m = members(&[("a", &["plugin_a"]), ("weather", &["get_weather"])]);
        let expected = set(&["ta", "tb", "plugin_a", "get_weather"]);
        assert_eq!(t.resolve("all", &m).tools, expected);
        assert_eq!(t.resolve("*", &m).tools, expected);
        assert!(t.resolve("all", &m).warnings.is_empty());
    }

    #[test]
    fn all_inside_includes_and_cycles_through_all_terminate() {
        let t = table(&[("a", &["ta"], &["all"]), ("b", &["tb"], &["a", "*"])]);
        let m = members(&[("w", &["tw"])]);
        let expected = set(&["ta", "tb", "tw"]);
        assert_eq!(t.resolve("a", &m).tools, expected);
        assert_eq!(t.resolve("b", &m).tools, expected);
    }

    #[test]
    fn all_is_not_overridable() {
        let mut t = table(&[("a", &["ta"], &[])]);
        t.insert("all", ToolsetDef::new("shadow", &["only_this"], &[]));
        assert!(t.resolve("all", &Members::new()).tools.contains("ta"));
    }

    #[test]
    fn registry_members_merge_with_static_tools() {
        let t = Toolsets::builtin();
        let m = members(&[
            ("file", &["read_file", "file_stat"]),
            ("weather", &["forecast"]),
        ]);
        let r = t.resolve("file", &m);
        assert_eq!(
            r.tools,
            set(&[
                "read_file",
                "write_file",
                "patch",
                "search_files",
                "file_stat"
            ])
        );
        // Registry-only toolsets resolve, and composites see merged members.
        assert_eq!(t.resolve("weather", &m).tools, set(&["forecast"]));
        assert!(t.resolve("debugging", &m).tools.contains("file_stat"));

        let merged = t.get("file", &m).unwrap();
        assert_eq!(
            merged.tools,
            strings(&[
                "file_stat",
                "patch",
                "read_file",
                "search_files",
                "write_file"
            ])
        );
        assert!(t.get_static("file").unwrap().tools.len() == 4);
        let plugin = t.get("weather", &m).unwrap();
        assert_eq!(plugin.description, "Plugin toolset: weather");
        assert!(plugin.includes.is_empty());
        assert!(t.get("all", &m).is_none());
        assert!(t.get("nope", &m).is_none());
    }

    #[test]
    fn builtin_composites_resolve() {
        let t = Toolsets::builtin();
        let none = Members::new();
        assert_eq!(
            t.resolve("debugging", &none).tools,
            set(&[
                "terminal",
                "process_manage",
                "web_search",
                "web_extract",
                "read_file",
                "write_file",
                "patch",
                "search_files",
            ])
        );
        assert_eq!(
            t.resolve("safe", &none).tools,
            set(&[
                "web_search",
                "web_extract",
                "vision_analyze",
                "image_generate"
            ])
        );
        assert!(!t.resolve("browser", &none).tools.contains("web_search"));
        // Every include in the built-in table names a built-in toolset.
        for name in t.names(&none) {
            assert!(t.resolve(&name, &none).warnings.is_empty(), "{name}");
        }
    }

    #[test]
    fn legacy_names_map_to_hermes_tools() {
        assert_eq!(
            legacy_tools("file_tools"),
            Some(&["read_file", "write_file", "patch", "search_files"][..])
        );
        assert_eq!(legacy_tools("terminal_tools"), Some(&["terminal"][..]));
        assert_eq!(
            legacy_tools("web_tools"),
            Some(&["web_search", "web_extract"][..])
        );
        assert_eq!(legacy_tools("cronjob_tools"), Some(&["cronjob_manage"][..]));
        assert_eq!(legacy_tools("browser_tools").map(<[_]>::len), Some(10));
        assert_eq!(legacy_tools("file"), None);

        let t = Toolsets::builtin();
        let r = t.select(
            Some(&strings(&["file_tools", "tts_tools"])),
            &[],
            &Members::new(),
        );
        assert_eq!(
            r.tools,
            set(&[
                "read_file",
                "write_file",
                "patch",
                "search_files",
                "text_to_speech"
            ])
        );
        assert!(r.warnings.is_empty());
        // Legacy names are not toolsets: they cannot be resolved or included.
        assert!(!t.is_known("file_tools", &Members::new()));
        assert!(t.resolve("file_tools", &Members::new()).tools.is_empty());
    }

    #[test]
    fn toolset_name_wins_over_legacy_name() {
        let t = table(&[("web_tools", &["custom"], &[])]);
        let r = t.select(Some(&strings(&["web_tools"])), &[], &Members::new());
        assert_eq!(r.tools, set(&["custom"]));
    }

    #[test]
    fn select_enables_then_disables_last() {
        let t = Toolsets::builtin();
        let none = Members::new();
        // `debugging` re-enables the file tools, yet disabling `file` wins.
        let r = t.select(
            Some(&strings(&["debugging", "file"])),
            &strings(&["file"]),
            &none,
        );
        assert_eq!(
            r.tools,
            set(&["terminal", "process_manage", "web_search", "web_extract"])
        );
        // Order inside the lists does not matter: disabling always comes last.
        let r2 = t.select(
            Some(&strings(&["file", "debugging"])),
            &strings(&["file"]),
            &none,
        );
        assert_eq!(r.tools, r2.tools);
        // Legacy names subtract too.
        let r3 = t.select(Some(&strings(&["web"])), &strings(&["web_tools"]), &none);
        assert!(r3.tools.is_empty());
    }

    #[test]
    fn select_none_means_everything_minus_disabled() {
        let t = table(&[("a", &["ta"], &[]), ("b", &["tb"], &[])]);
        let m = members(&[("w", &["tw"])]);
        let r = t.select(None, &strings(&["b"]), &m);
        assert_eq!(r.tools, set(&["ta", "tw"]));
        assert_eq!(t.select(None, &[], &m).tools, t.resolve("all", &m).tools);
        assert!(t.select(None, &strings(&["*"]), &m).tools.is_empty());
        assert!(t.select(Some(&[]), &[], &m).tools.is_empty());
    }

    #[test]
    fn select_reports_unknown_names_in_both_lists() {
        let t = Toolsets::builtin();
        let r = t.select(
            Some(&strings(&["web", "bogus"])),
            &strings(&["ghost"]),
            &Members::new(),
        );
        assert_eq!(r.tools, set(&["web_search", "web_extract"]));
        assert_eq!(
            r.warnings,
            vec![
                "Unknown toolset: bogus".to_owned(),
                "Unknown toolset: ghost".to_owned()
            ]
        );
    }

    #[test]
    fn names_descriptions_and_known() {
        let t = table(&[("b", &[], &[]), ("a", &[], &[])]);
        let m = members(&[("c", &["x"]), ("a", &["y"])]);
        assert_eq!(t.names(&m), strings(&["a", "b", "c"]));
        assert!(t.is_known("all", &m) && t.is_known("*", &m) && t.is_known("c", &m));
        assert!(!t.is_known("d", &m));
        assert_eq!(t.description("c", &m).as_deref(), Some("Plugin toolset: c"));
        assert_eq!(t.description("a", &m).as_deref(), Some(""));
        assert_eq!(t.description("d", &m), None);
        assert_eq!(
            Toolsets::builtin().description("web", &m).as_deref(),
            Some("Web research and content extraction tools")
        );
    }

    #[test]
    fn insert_replaces_and_returns_previous() {
        let mut t = Toolsets::builtin();
        let old = t.insert("web", ToolsetDef::new("mine", &["only"], &[]));
        assert_eq!(old.unwrap().tools, strings(&["web_search", "web_extract"]));
        assert_eq!(t.resolve("web", &Members::new()).tools, set(&["only"]));
    }

    #[test]
    fn deep_include_chain_does_not_overflow() {
        let mut t = Toolsets::new();
        let depth = 100_000;
        for i in 0..depth {
            let next = format!("t{}", i + 1);
            t.insert(
                format!("t{i}"),
                ToolsetDef {
                    description: String::new(),
                    tools: vec![format!("tool{i}")],
                    includes: vec![next],
                },
            );
        }
        let r = t.resolve("t0", &Members::new());
        assert_eq!(r.tools.len(), depth);
        assert_eq!(r.warnings.len(), 1, "the chain ends in one unknown name");
    }

    #[test]
    fn toolset_def_serde_defaults_and_rejects_typos() {
        let def: ToolsetDef =
            serde_json::from_str(r#"{"description":"d","includes":["web"]}"#).unwrap();
        assert_eq!(def, ToolsetDef::new("d", &[], &["web"]));
        assert!(serde_json::from_str::<ToolsetDef>(r#"{"include":["web"]}"#).is_err());
        let back: ToolsetDef = serde_json::from_str(&serde_json::to_string(&def).unwrap()).unwrap();
        assert_eq!(back, def);
    }
}
