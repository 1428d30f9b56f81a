use super::*;
use proptest::prelude::*;

fn decl(text: &str) -> Declaration {
    Declaration::parse(text.as_bytes()).unwrap()
}

fn dest(s: &str) -> Destination {
    Destination::parse(s).unwrap()
}

fn op() -> OperatorPolicy {
    OperatorPolicy::with_workspace("/w".into())
}

#[test]
fn undeclared_is_denied_even_when_the_operator_allows_it() {
    let mut op = op();
    op.defaults.env.insert("SECRET".into());
    op.defaults.network.push(dest("https://api.example.com"));
    op.defaults.terminal = true;
    let g = effective(&decl("name='t'\ntoolset='x'"), &op, None);
    assert!(g.mounts.is_empty() && g.env.is_empty() && g.network.is_empty() && !g.terminal);
    assert!(g.denials.is_empty());
}

#[test]
fn required_env_not_granted_makes_the_tool_unavailable() {
    let d = decl("name='t'\ntoolset='x'\nrequires_env=['KEY']");
    let mut op = op();
    let g = effective(&d, &op, None);
    assert_eq!(
        g.unavailable_reason(),
        Some("requires env KEY, which the operator does not grant")
    );
    op.defaults.env.insert("KEY".into());
    let g = effective(&d, &op, None);
    assert_eq!(g.env, ["KEY"]);
    assert_eq!(g.unavailable_reason(), None);
    let tenant = TenantPolicy {
        env: Some(BTreeSet::new()),
        ..TenantPolicy::default()
    };
    let g = effective(&d, &op, Some(("acme", &tenant)));
    assert_eq!(
        g.unavailable_reason(),
        Some("requires env KEY, which tenant acme does not grant")
    );
}

#[test]
fn per_tool_grants_replace_the_defaults() {
    let d = decl(
        "name='weather'\ntoolset='x'\nrequires_env=['KEY']\n[capabilities]\nnetwork=['https://api.example.com']",
    );
    let mut op = op();
    op.tools.insert(
        "weather".into(),
        GrantOverride {
            env: Some(BTreeSet::from(["KEY".to_owned()])),
            network: Some(vec![dest("https://*.example.com")]),
            ..GrantOverride::default()
        },
    );
    let g = effective(&d, &op, None);
    assert_eq!(g.env, ["KEY"]);
    assert_eq!(g.network, [dest("https://api.example.com")]);
    let other = decl("name='other'\ntoolset='x'\nrequires_env=['KEY']");
    assert!(effective(&other, &op, None).unavailable_reason().is_some());
}

#[test]
fn mounts_respect_operator_and_tenant_ceilings() {
    let rw = decl("name='t'\ntoolset='x'\n[capabilities]\nfs=[{mount='workspace',access='rw'}]");
    let ro = decl("name='t'\ntoolset='x'\n[capabilities]\nfs=[{mount='workspace',access='ro'}]");
    let mut op = op();
    assert_eq!(effective(&rw, &op, None).mounts[0].access, Access::Rw);
    let tenant = TenantPolicy {
        mounts: Some(BTreeMap::from([(
            "workspace".to_owned(),
            TenantMount {
                access: Access::Ro,
                subdir: Some("acme".into()),
            },
        )])),
        ..TenantPolicy::default()
    };
    let g = effective(&rw, &op, Some(("acme", &tenant)));
    assert_eq!(
        g.unavailable_reason(),
        Some("needs mount `workspace` read-write, tenant acme allows only read-only")
    );
    let g = effective(&ro, &op, Some(("acme", &tenant)));
    assert_eq!(g.mounts[0].host_path, PathBuf::from("/w/acme"));
    op.mounts.get_mut("workspace").unwrap().ceiling = Access::Ro;
    assert!(effective(&rw, &op, None).unavailable_reason().is_some());
    op.defaults.mounts.clear();
    assert_eq!(
        effective(&ro, &op, None).unavailable_reason(),
        Some("needs mount `workspace`, which the operator does not grant to this tool")
    );
}

#[test]
fn a_tenant_subdirectory_cannot_leave_the_mount() {
    let ro = decl("name='t'\ntoolset='x'\n[capabilities]\nfs=[{mount='workspace',access='ro'}]");
    for bad in ["../other", "/etc", "a/../../b"] {
        let tenant = TenantPolicy {
            mounts: Some(BTreeMap::from([(
                "workspace".to_owned(),
                TenantMount {
                    access: Access::Ro,
                    subdir: Some(bad.into()),
                },
            )])),
            ..TenantPolicy::default()
        };
        let g = effective(&ro, &op(), Some(("t", &tenant)));
        assert!(g.mounts.is_empty(), "{bad}");
        assert!(
            g.unavailable_reason().unwrap().contains("leaves the mount"),
            "{bad}"
        );
    }
}

#[test]
fn core_instances_are_the_declaration_s_within_the_operator_s_ceiling() {
    let mut op = op();
    let of = |d: &str, op: &OperatorPolicy| effective(&decl(d), op, None).limits.core_instances;
    assert_eq!(of("name='t'\ntoolset='x'", &op), 8);
    assert_eq!(of("name='t'\ntoolset='x'\ncore_instances=16", &op), 16);
    assert_eq!(of("name='t'\ntoolset='x'\ncore_instances=1000", &op), 64);
    assert_eq!(op.max_core_instances(), 64);
    // One tool's ceiling raised: the engine's pool must allow it, the others keep 64.
    let mut big = GrantOverride::default();
    big.limits.max_core_instances = Some(100);
    op.tools.insert("big".into(), big);
    assert_eq!(op.max_core_instances(), 100);
    assert_eq!(op.grants_for("big").limits.max_core_instances, 100);
    assert_eq!(op.grants_for("t").limits.max_core_instances, 64);
    op.defaults.limits.max_core_instances = 10;
    assert_eq!(of("name='t'\ntoolset='x'\ncore_instances=16", &op), 10);
    assert!(Declaration::parse(b"name='t'\ntoolset='x'\ncore_instances=0").is_err());
}

#[test]
fn limits_are_wishes_capped_by_operator_and_tenant() {
    let op = op();
    let g = effective(
        &decl("name='t'\ntoolset='x'\ntimeout_ms=999999999\nmemory_mb=4096"),
        &op,
        None,
    );
    assert_eq!(g.limits.timeout_ms, 300_000);
    assert_eq!(g.limits.memory_bytes, 512 * 1024 * 1024);
    let g = effective(&decl("name='t'\ntoolset='x'"), &op, None);
    assert_eq!(
        (
            g.limits.timeout_ms,
            g.limits.memory_bytes,
            g.limits.result_chars
        ),
        (30_000, 64 << 20, 100_000)
    );
    let tenant = TenantPolicy {
        limits: TenantLimits {
            timeout_ms: Some(1000),
            memory_mb: Some(8),
            result_chars: Some(10),
            fuel: Some(5),
            max_concurrent: None,
        },
        ..TenantPolicy::default()
    };
    let g = effective(&decl("name='t'\ntoolset='x'"), &op, Some(("t", &tenant)));
    assert_eq!(
        (
            g.limits.timeout_ms,
            g.limits.memory_bytes,
            g.limits.result_chars,
            g.limits.fuel
        ),
        (1000, 8 << 20, 10, Some(5))
    );
}

#[test]
fn terminal_needs_declaration_operator_and_tenant() {
    let d = decl("name='terminal'\ntoolset='terminal'\n[capabilities]\nterminal=true");
    let mut op = op();
    assert_eq!(
        effective(&d, &op, None).unavailable_reason(),
        Some("needs the terminal, which the operator does not grant")
    );
    op.tools.insert(
        "terminal".into(),
        GrantOverride {
            terminal: Some(true),
            ..GrantOverride::default()
        },
    );
    assert!(effective(&d, &op, None).terminal);
    let tenant = TenantPolicy {
        terminal: Some(false),
        ..TenantPolicy::default()
    };
    let g = effective(&d, &op, Some(("t", &tenant)));
    assert!(!g.terminal);
    assert_eq!(
        g.unavailable_reason(),
        Some("needs the terminal, which tenant t does not grant")
    );
}

#[test]
fn ungranted_destinations_are_absent_and_no_destination_at_all_hides_the_tool() {
    let d = decl("name='t'\ntoolset='x'\n[capabilities]\nnetwork=['https://a.example.com']");
    let mut op = op();
    op.defaults.network.push(dest("https://b.example.com"));
    let g = effective(&d, &op, None);
    assert!(g.network.is_empty());
    assert_eq!(
        g.unavailable_reason(),
        Some("needs network access, which the operator does not grant")
    );
    let d = decl(
        "name='t'\ntoolset='x'\n[capabilities]\nnetwork=['https://a.example.com', 'https://b.example.com']",
    );
    let g = effective(&d, &op, None);
    assert_eq!(g.network, [dest("https://b.example.com")]);
    assert_eq!(g.unavailable_reason(), None);
    assert_eq!(g.denials.len(), 1);
    assert!(!g.denials[0].blocks);
    let tenant = TenantPolicy {
        network: Some(vec![]),
        ..TenantPolicy::default()
    };
    let g = effective(&d, &op, Some(("acme", &tenant)));
    assert_eq!(
        g.unavailable_reason(),
        Some("needs network access, which tenant acme does not grant")
    );
}

// ---- property: effective grants are never wider than any of the three inputs ----

const MOUNTS: [&str; 3] = ["workspace", "data", "cache"];
const VARS: [&str; 4] = ["A", "B", "C", "D"];
const DESTS: [&str; 10] = [
    "https://api.example.com",
    "https://*.example.com",
    "https://x.api.example.com",
    "http://api.example.com",
    "https://other.net:8443",
    "http://127.0.0.1:8080",
    "https://*",
    "http://*:*",
    "http://127.0.0.1:*",
    "http://*:8080",
];

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![Just(Access::Ro), Just(Access::Rw)]
}

fn subset<T: Clone + std::fmt::Debug + 'static>(
    items: &'static [T],
) -> impl Strategy<Value = Vec<T>> {
    proptest::sample::subsequence(items.to_vec(), 0..=items.len())
}

fn declaration() -> impl Strategy<Value = Declaration> {
    (
        proptest::collection::vec((proptest::sample::select(&MOUNTS[..]), access()), 0..3),
        subset(&VARS),
        subset(&VARS),
        subset(&DESTS),
        any::<bool>(),
        proptest::option::of(1u64..1_000_000),
        proptest::option::of(1u64..2048),
        proptest::option::of(1usize..5_000_000),
    )
        .prop_map(|(fs, req, env, net, terminal, timeout, mem, result)| {
            let mut text = format!(
                "name='t'\ntoolset='x'\nrequires_env={req:?}\n{}{}{}[capabilities]\nenv={env:?}\nnetwork={net:?}\nterminal={terminal}\nfs=[",
                timeout.map(|t| format!("timeout_ms={t}\n")).unwrap_or_default(),
                mem.map(|t| format!("memory_mb={t}\n")).unwrap_or_default(),
                result.map(|t| format!("max_result_chars={t}\n")).unwrap_or_default(),
            );
            for (m, a) in fs {
                let a = if a == Access::Ro { "ro" } else { "rw" };
                text.push_str(&format!("{{mount='{m}',access='{a}'}},"));
            }
            text.push(']');
            Declaration::parse(text.as_bytes()).unwrap()
        })
}

fn operator() -> impl Strategy<Value = OperatorPolicy> {
    (
        proptest::collection::vec((proptest::sample::select(&MOUNTS[..]), access()), 0..3),
        subset(&MOUNTS),
        subset(&VARS),
        subset(&DESTS),
        any::<bool>(),
        (1u64..600_000, 1u64..1024, 1usize..2_000_000),
    )
        .prop_map(
            |(mounts, granted, env, net, terminal, (max_t, max_m, max_r))| OperatorPolicy {
                mounts: mounts
                    .into_iter()
                    .map(|(m, a)| {
                        (
                            m.to_owned(),
                            MountGrant {
                                host_path: PathBuf::from("/srv").join(m),
                                ceiling: a,
                            },
                        )
                    })
                    .collect(),
                defaults: GrantSet {
                    mounts: granted.into_iter().map(str::to_owned).collect(),
                    env: env.into_iter().map(str::to_owned).collect(),
                    network: net.into_iter().map(dest).collect(),
                    terminal,
                    keyvalue: None,
                    clock: ClockPolicy::Real,
                    limits: LimitPolicy {
                        max_timeout_ms: max_t,
                        max_memory_mb: max_m,
                        max_result_chars: max_r,
                        ..LimitPolicy::default()
                    },
                },
                tools: BTreeMap::new(),
                tenants: BTreeMap::new(),
                terminal: Default::default(),
                hooks: Vec::new(),
            },
        )
}

fn tenant() -> impl Strategy<Value = Option<TenantPolicy>> {
    proptest::option::of(
        (
            proptest::option::of(proptest::collection::vec(
                (proptest::sample::select(&MOUNTS[..]), access()),
                0..3,
            )),
            proptest::option::of(subset(&VARS)),
            proptest::option::of(subset(&DESTS)),
            proptest::option::of(any::<bool>()),
            (
                proptest::option::of(1u64..600_000),
                proptest::option::of(1u64..1024),
                proptest::option::of(1usize..2_000_000),
            ),
        )
            .prop_map(|(mounts, env, net, terminal, (t, m, r))| TenantPolicy {
                toolsets: None,
                mounts: mounts.map(|ms| {
                    ms.into_iter()
                        .map(|(m, a)| {
                            (
                                m.to_owned(),
                                TenantMount {
                                    access: a,
                                    subdir: None,
                                },
                            )
                        })
                        .collect()
                }),
                env: env.map(|e| e.into_iter().map(str::to_owned).collect()),
                network: net.map(|n| n.into_iter().map(dest).collect()),
                terminal,
                keyvalue: None,
                limits: TenantLimits {
                    timeout_ms: t,
                    memory_mb: m,
                    result_chars: r,
                    fuel: None,
                    max_concurrent: None,
                },
            }),
    )
}

proptest! {
    #[test]
    fn effective_grants_are_never_wider_than_any_input(d in declaration(), op in operator(), t in tenant()) {
        let g = effective(&d, &op, t.as_ref().map(|t| ("t", t)));
        for m in &g.mounts {
            let declared = d.capabilities.fs.iter().any(|r| r.mount == m.name && m.access <= r.access);
            let ceiling = op.mounts.get(&m.name).is_some_and(|o| m.access <= o.ceiling);
            prop_assert!(declared && ceiling && op.defaults.mounts.contains(&m.name));
            if let Some(tm) = t.as_ref().and_then(|t| t.mounts.as_ref()) {
                prop_assert!(tm.get(&m.name).is_some_and(|x| m.access <= x.access));
            }
        }
        for v in &g.env {
            prop_assert!(d.env_vars().any(|x| x == v));
            prop_assert!(op.defaults.env.contains(v));
            if let Some(te) = t.as_ref().and_then(|t| t.env.as_ref()) {
                prop_assert!(te.contains(v));
            }
        }
        for n in &g.network {
            let declared: Vec<Destination> = d.capabilities.network.iter().map(|s| dest(s)).collect();
            prop_assert!(declared.iter().any(|x| x.covers(n)));
            prop_assert!(op.defaults.network.iter().any(|x| x.covers(n)));
            if let Some(tn) = t.as_ref().and_then(|t| t.network.as_ref()) {
                prop_assert!(tn.iter().any(|x| x.covers(n)));
            }
        }
        if g.terminal {
            prop_assert!(d.capabilities.terminal && op.defaults.terminal);
            prop_assert!(t.as_ref().and_then(|t| t.terminal) != Some(false));
        }
        let l = &op.defaults.limits;
        prop_assert!(g.limits.timeout_ms <= l.max_timeout_ms);
        prop_assert!(g.limits.memory_bytes <= l.max_memory_mb << 20);
        prop_assert!(g.limits.result_chars <= l.max_result_chars);
        if let Some(tl) = t.as_ref().map(|t| t.limits) {
            prop_assert!(tl.timeout_ms.is_none_or(|x| g.limits.timeout_ms <= x));
            prop_assert!(tl.memory_mb.is_none_or(|x| g.limits.memory_bytes <= x << 20));
            prop_assert!(tl.result_chars.is_none_or(|x| g.limits.result_chars <= x));
        }
        // Deterministic: the same inputs give the same grants.
        prop_assert_eq!(&g, &effective(&d, &op, t.as_ref().map(|t| ("t", t))));
    }
}

#[test]
fn command_line_additions_reach_every_list_but_the_tenants() {
    let mut p = OperatorPolicy::with_workspace(PathBuf::from("/w"));
    p.tools.insert(
        "weather".into(),
        GrantOverride {
            env: Some(BTreeSet::from(["KEY".to_owned()])),
            network: Some(Vec::new()),
            ..GrantOverride::default()
        },
    );
    p.tools.insert("plain".into(), GrantOverride::default());
    let d = dest("https://example.com");
    p.allow_everywhere(&["LANG".to_owned()], std::slice::from_ref(&d));
    assert!(p.defaults.env.contains("LANG"));
    assert_eq!(p.defaults.network, vec![d.clone()]);
    let weather = p.grants_for("weather");
    assert_eq!(
        weather.env,
        BTreeSet::from(["KEY".to_owned(), "LANG".to_owned()])
    );
    assert_eq!(weather.network, vec![d]);
    // A tool without its own list gets the defaults, additions included.
    assert!(p.grants_for("plain").env.contains("LANG"));
}

#[test]
fn moving_the_workspace_keeps_its_ceiling() {
    let mut p = OperatorPolicy::with_workspace(PathBuf::from("/w"));
    p.mounts.get_mut("workspace").unwrap().ceiling = Access::Ro;
    p.move_workspace(PathBuf::from("/elsewhere"));
    let m = &p.mounts["workspace"];
    assert_eq!(
        (m.host_path.as_path(), m.ceiling),
        (Path::new("/elsewhere"), Access::Ro)
    );
    p.mounts.clear();
    p.move_workspace(PathBuf::from("/new"));
    assert_eq!(p.mounts["workspace"].ceiling, Access::Rw);
}

#[test]
fn bundled_terminal_tools_get_the_terminal_and_room_for_the_longest_command() {
    let mut p = OperatorPolicy::with_workspace(PathBuf::from("/w"));
    p.tools.insert(
        "terminal".into(),
        GrantOverride {
            limits: LimitOverride {
                max_timeout_ms: Some(1000),
                ..LimitOverride::default()
            },
            ..GrantOverride::default()
        },
    );
    let b = p.for_bundled_terminal_tools();
    let floor = (crate::terminal::MAX_TIMEOUT_SECS + 60) * 1000;
    assert!(b.defaults.terminal && !p.defaults.terminal);
    assert!(b.defaults.limits.max_timeout_ms >= floor);
    assert_eq!(b.tools["terminal"].limits.max_timeout_ms, Some(floor));
}
