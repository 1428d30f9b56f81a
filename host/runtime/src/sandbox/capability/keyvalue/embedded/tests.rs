use super::super::backend::Store;
use super::*;
use std::sync::Arc;

fn ns(id: &StoreId, bucket: &str) -> Namespace {
    Namespace::new(Arc::new(Store::new(id.clone())), bucket)
}

fn quota(max_keys: u64, max_value_bytes: u64, max_total_bytes: u64) -> KeyValueQuota {
    KeyValueQuota {
        max_keys,
        max_value_bytes,
        max_total_bytes,
    }
}

#[test]
fn quotas_usage_and_listing_hold_across_reopening() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("kv.redb");
    let quota = quota(3, 10, 20);
    let acme = StoreId::tenant("t", "acme");
    let ns_ = ns(&acme, "");
    let other = ns(&StoreId::tenant("t", "globex"), "");
    {
        let kv = Embedded::open(&path).unwrap();
        kv.set(&ns_, "a", b"1234", &quota).unwrap();
        kv.set(&ns_, "b", b"1", &quota).unwrap();
        assert!(matches!(
            kv.set(&ns_, "c", &[0; 11], &quota),
            Err(KeyValueError::Quota(_))
        ));
        // a: 5, b: 2, c with 9 bytes: 10 → 17 total, fits; a fourth key does not.
        kv.set(&ns_, "c", &[0; 9], &quota).unwrap();
        assert!(matches!(
            kv.set(&ns_, "d", b"", &quota),
            Err(KeyValueError::Quota(_))
        ));
        // Overwriting an existing key is not a new key; growing past the total is
        // refused and changes nothing.
        kv.set(&ns_, "b", b"22", &quota).unwrap();
        assert!(matches!(
            kv.set(&ns_, "a", &[1; 10], &quota),
            Err(KeyValueError::Quota(_))
        ));
        assert_eq!(kv.get(&ns_, "a").unwrap().unwrap(), b"1234");
        assert_eq!(kv.get(&other, "a").unwrap(), None);
        assert_eq!(kv.increment(&other, "n", 5, &quota).unwrap(), 5);
        assert_eq!(kv.increment(&other, "n", 2, &quota).unwrap(), 7);
        assert!(
            kv.increment(&ns_, "a", 1, &quota).is_ok(),
            "\"1234\" is a number"
        );
        assert!(matches!(
            kv.increment(&ns_, "c", 1, &quota),
            Err(KeyValueError::Value(_))
        ));
    }
    let kv = Embedded::open(&path).unwrap();
    assert_eq!(kv.get(&ns_, "a").unwrap().unwrap(), b"1235");
    assert_eq!(
        kv.list(&ns_, 0).unwrap(),
        (vec!["a".into(), "b".into(), "c".into()], None)
    );
    assert_eq!(kv.list(&ns_, 2).unwrap().0, vec!["c".to_owned()]);
    kv.delete(&ns_, "a").unwrap();
    kv.delete(&ns_, "a").unwrap();
    // Swap: written only over the value expected (absent, empty or bytes), under
    // the quota; a refused swap changes nothing.
    assert!(!kv.swap(&ns_, "a", Some(b"1235"), b"x", &quota).unwrap());
    assert!(kv.swap(&ns_, "a", None, b"", &quota).unwrap());
    assert!(!kv.swap(&ns_, "a", None, b"y", &quota).unwrap());
    assert!(
        kv.swap(&ns_, "a", Some(b"other"), b"", &quota).unwrap(),
        "already holds the value"
    );
    assert!(kv.swap(&ns_, "a", Some(b""), b"zz", &quota).unwrap());
    assert_eq!(kv.get(&ns_, "a").unwrap().unwrap(), b"zz");
    assert!(matches!(
        kv.swap(&ns_, "a", Some(b"zz"), &[0; 11], &quota),
        Err(KeyValueError::Quota(_))
    ));
    assert_eq!(kv.get(&ns_, "a").unwrap().unwrap(), b"zz");
    kv.delete(&ns_, "a").unwrap();
    kv.set(&ns_, "d", b"x", &quota).unwrap();
    assert_eq!(kv.list(&other, 0).unwrap().0, vec!["n".to_owned()]);
}

/// A guest chooses the cursor: no cursor makes `list-keys` read past its own
/// bucket (it walked every tenant's data after it, inside one host call).
#[test]
fn a_cursor_never_reads_past_its_own_bucket() {
    let kv = Embedded::in_memory().unwrap();
    let quota = quota(10_000, 100, 1 << 20);
    // "acme" sorts before "globex": globex's data follows acme's in the table.
    let acme = ns(&StoreId::tenant("t", "acme"), "");
    let globex = ns(&StoreId::tenant("t", "globex"), "");
    let acme_later = ns(&StoreId::tenant("t", "acme"), "z");
    for i in 0..5 {
        kv.set(&acme, &format!("a{i}"), b"x", &quota).unwrap();
    }
    kv.set(&acme_later, "other-bucket", b"x", &quota).unwrap();
    for i in 0..3000 {
        kv.set(&globex, &format!("g{i:04}"), b"x", &quota).unwrap();
    }
    for from in [0, 3, 5, 6, 1000, u64::from(u32::MAX), u64::MAX] {
        let (keys, next, read) = kv.list_counted(&acme, from).unwrap();
        let want: Vec<String> = (0..5)
            .skip(usize::try_from(from).unwrap_or(usize::MAX))
            .map(|i| format!("a{i}"))
            .collect();
        assert_eq!((keys, next), (want, None), "cursor {from}");
        assert!(read <= 6, "cursor {from} read {read} entries for 5 keys");
    }
    // Paging through another's many keys stays in it and ends.
    let (page, next, _) = kv.list_counted(&globex, 0).unwrap();
    assert_eq!((page.len(), next), (PAGE, Some(1000)));
    let (page, next, _) = kv.list_counted(&globex, 2000).unwrap();
    assert_eq!((page.len(), next), (1000, None));
    assert!(page.iter().all(|k| k.starts_with('g')));
}

/// After the operator lowers a quota below what a store holds, the store may
/// still rewrite a key the same size or smaller; a new key or growth is refused.
#[test]
fn a_lowered_quota_refuses_growth_only() {
    let kv = Embedded::in_memory().unwrap();
    let id = StoreId::tenant("t", "acme");
    let n = ns(&id, "");
    for k in ["a", "b", "c"] {
        kv.set(&n, k, b"12345", &quota(10, 100, 100)).unwrap();
    }
    let lowered = quota(2, 100, 10);
    kv.set(&n, "a", b"54321", &lowered).unwrap();
    kv.set(&n, "b", b"1", &lowered).unwrap();
    assert!(kv.swap(&n, "c", Some(b"12345"), b"xyz", &lowered).unwrap());
    assert!(matches!(
        kv.set(&n, "a", b"543210", &lowered),
        Err(KeyValueError::Quota(_))
    ));
    assert!(matches!(
        kv.set(&n, "d", b"", &lowered),
        Err(KeyValueError::Quota(_))
    ));
    assert_eq!(kv.get(&n, "a").unwrap().unwrap(), b"54321");
    let info = kv.stores(&StoreFilter::default()).unwrap();
    assert_eq!((info[0].keys, info[0].bytes), (3, 12));
}

#[test]
fn a_quota_holds_for_the_store_across_its_buckets() {
    let kv = Embedded::in_memory().unwrap();
    let quota = quota(5, 100, 1000);
    let id = StoreId::tenant("t", "acme");
    let mut written = 0;
    for bucket in ["a", "b", "c", "d"] {
        for i in 0..5 {
            if kv
                .set(&ns(&id, bucket), &format!("k{i}"), b"x", &quota)
                .is_ok()
            {
                written += 1;
            }
        }
    }
    assert_eq!(written, 5, "four buckets, one store: five keys in all");
    let info = kv.stores(&StoreFilter::default()).unwrap();
    assert_eq!(info.len(), 1);
    assert_eq!((info[0].keys, info[0].bytes), (5, 15));
    // Deleting in one bucket makes room in another.
    kv.delete(&ns(&id, "a"), "k0").unwrap();
    kv.set(&ns(&id, "d"), "k0", b"x", &quota).unwrap();
    let entries = kv.entries(&id).unwrap();
    assert_eq!(entries.len(), 5);
    assert_eq!(
        entries.last().unwrap(),
        &EntryInfo {
            bucket: "d".into(),
            key: "k0".into(),
            len: 1
        }
    );
}

#[test]
fn a_tenant_s_session_stores_share_one_ceiling_and_end_with_their_session() {
    let settings = KeyValueSettings {
        sessions_max_keys: 8,
        sessions_max_total_bytes: 1000,
        ..KeyValueSettings::default()
    };
    let kv = Embedded::in_memory_with(settings).unwrap();
    let quota = quota(5, 100, 1000);
    let mut written = Vec::new();
    for s in ["s1", "s2", "s3", "s4"] {
        let id = StoreId::session("todo", "acme", s);
        let n = (0..5)
            .take_while(|i| kv.set(&ns(&id, ""), &format!("k{i}"), b"x", &quota).is_ok())
            .count();
        written.push(n);
    }
    assert_eq!(written, [5, 3, 0, 0], "eight keys across the sessions");
    let refused = kv
        .set(
            &ns(&StoreId::session("todo", "acme", "s9"), ""),
            "k",
            b"x",
            &quota,
        )
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("session stores hold their 8 keys together"),
        "{refused}"
    );
    // Another tenant, and the tenant's own tenant-scope store, are not held to it.
    kv.set(
        &ns(&StoreId::session("todo", "globex", "s1"), ""),
        "k",
        b"x",
        &quota,
    )
    .unwrap();
    kv.set(
        &ns(&StoreId::tenant("memory", "acme"), ""),
        "k",
        b"x",
        &quota,
    )
    .unwrap();
    // The end of s1 frees its five keys; a session without an id ends nothing.
    assert_eq!(kv.end_session("acme", "").unwrap(), 0);
    assert_eq!(kv.end_session("acme", "s1").unwrap(), 1);
    assert_eq!(kv.end_session("acme", "s1").unwrap(), 0);
    let s3 = StoreId::session("todo", "acme", "s3");
    for i in 0..5 {
        kv.set(&ns(&s3, ""), &format!("k{i}"), b"x", &quota)
            .unwrap();
    }
    assert_eq!(
        kv.get(&ns(&StoreId::session("todo", "acme", "s1"), ""), "k0")
            .unwrap(),
        None
    );
    let acme = kv
        .stores(&StoreFilter {
            tenant: Some("acme".into()),
            ..StoreFilter::default()
        })
        .unwrap();
    let names: Vec<String> = acme.iter().map(|s| s.id.to_string()).collect();
    assert_eq!(
        names,
        [
            "memory of tenant \"acme\"",
            "todo of tenant \"acme\", session \"s2\"",
            "todo of tenant \"acme\", session \"s3\""
        ]
    );
    assert!(acme[0].expires_in.is_none() && acme[1].expires_in.is_some());
}

#[test]
fn idle_session_stores_are_swept_and_tenant_stores_kept() {
    let settings = KeyValueSettings {
        session_expiry: Duration::from_secs(60),
        ..KeyValueSettings::default()
    };
    let kv = Embedded::in_memory_with(settings).unwrap();
    let quota = quota(5, 100, 1000);
    let session = StoreId::session("todo", "acme", "s1");
    kv.set(&ns(&session, "b"), "k", b"x", &quota).unwrap();
    kv.set(
        &ns(&StoreId::tenant("memory", "acme"), ""),
        "k",
        b"x",
        &quota,
    )
    .unwrap();
    let now = now_ms();
    assert_eq!(
        kv.sweep_at(now + 30_000).unwrap(),
        0,
        "not idle long enough"
    );
    assert_eq!(kv.sweep_at(now + 120_000).unwrap(), 1);
    assert_eq!(kv.get(&ns(&session, "b"), "k").unwrap(), None);
    assert_eq!(kv.entries(&session).unwrap(), []);
    let left = kv.stores(&StoreFilter::default()).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, StoreId::tenant("memory", "acme"));
    // Its use left with it: the ceiling counts from zero again.
    assert_eq!(kv.sweep_at(now + 1_000_000).unwrap(), 0);
}

/// A sweep deletes at most `SWEEP_ENTRIES` entries per write transaction (it
/// deleted 256 stores per transaction, whatever they held, while every call's
/// write waited for redb's one writer).
#[test]
fn a_sweep_holds_the_writer_for_a_bounded_number_of_entries() {
    let settings = KeyValueSettings {
        sessions_max_keys: 1 << 20,
        ..KeyValueSettings::default()
    };
    let kv = Embedded::in_memory_with(settings).unwrap();
    let q = quota(100_000, 100, 1 << 30);
    for s in ["s1", "s2", "s3"] {
        let n = ns(&StoreId::session("todo", "acme", s), "");
        for i in 0..4000 {
            kv.set(&n, &format!("k{i}"), b"x", &q).unwrap();
        }
    }
    let far = now_ms() + 365 * 86_400_000;
    let (deleted, steps) = kv.sweep_in_steps(far).unwrap();
    assert_eq!(deleted, 3);
    assert_eq!(steps, [8000, 4000]);
    assert!(kv.stores(&StoreFilter::default()).unwrap().is_empty());
}

#[test]
fn a_layout_1_file_gets_its_use_per_store_counted_once() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("kv.redb");
    {
        // What an older host left: data, and use per bucket.
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut data = txn.open_table(DATA).unwrap();
            let mut usage = txn.open_table(OLD_USAGE).unwrap();
            let a = ns(&StoreId::tenant("memory", "acme"), "");
            let b = ns(&StoreId::tenant("memory", "acme"), "other");
            let s = ns(&StoreId::session("todo", "acme", "s1"), "");
            for (n, key) in [(&a, "x"), (&b, "y"), (&s, "z")] {
                data.insert((n.as_str(), key), b"12".as_slice()).unwrap();
                usage.insert(n.as_str(), (1, 3)).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    let kv = Embedded::open(&path).unwrap();
    let stores = kv.stores(&StoreFilter::default()).unwrap();
    let got: Vec<(String, u64, u64)> = stores
        .iter()
        .map(|s| (s.id.to_string(), s.keys, s.bytes))
        .collect();
    assert_eq!(
        got,
        [
            ("memory of tenant \"acme\"".to_owned(), 2, 6),
            ("todo of tenant \"acme\", session \"s1\"".to_owned(), 1, 3)
        ]
    );
    assert_eq!(kv.end_session("acme", "s1").unwrap(), 1);
}

/// A layout-1 session store without a session id reads as a tenant store: at its
/// first write as a session store its whole use joins the tenant's session total
/// (it stayed out of it: the ceiling did not count it), and leaves it with it.
#[test]
fn a_layout_1_session_store_without_an_id_joins_the_ceiling_at_its_next_write() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("kv.redb");
    let todo = StoreId::session("todo", "acme", "");
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut data = txn.open_table(DATA).unwrap();
            let n = ns(&todo, "");
            for key in ["a", "b"] {
                data.insert((n.as_str(), key), b"x".as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    let settings = KeyValueSettings {
        sessions_max_keys: 3,
        ..KeyValueSettings::default()
    };
    let kv = Embedded::open_with(&path, settings).unwrap();
    let q = quota(10, 100, 1000);
    kv.set(&ns(&todo, ""), "c", b"x", &q).unwrap();
    let refused = kv.set(&ns(&todo, ""), "d", b"x", &q).unwrap_err();
    assert!(
        refused.to_string().contains("hold their 3 keys together"),
        "{refused}"
    );
    let other = ns(&StoreId::session("todo", "acme", "s2"), "");
    assert!(
        kv.set(&other, "k", b"x", &q).is_err(),
        "the ceiling is full"
    );
    kv.delete(&ns(&todo, ""), "a").unwrap();
    kv.set(&other, "k", b"x", &q).unwrap();
    // Swept when idle: every key of it leaves the total.
    assert_eq!(kv.sweep_at(now_ms() + 365 * 86_400_000).unwrap(), 2);
    for k in ["k1", "k2", "k3"] {
        kv.set(&other, k, b"x", &q).unwrap();
    }
}

#[test]
fn the_file_is_private_to_the_host() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("made/here/kv.redb");
    drop(Embedded::open(&path).unwrap());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(&dir.path().join("made")), 0o700);
    // A file an older host left readable by all is made private.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(Embedded::open(&path).unwrap());
    assert_eq!(mode(&path), 0o600);
}
