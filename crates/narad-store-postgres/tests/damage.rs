//! Damaged PostgreSQL stores (a real server): columns of the wrong type
//! and rows that disagree with their keys are the typed `corrupt` error,
//! never a panic; the shared damage suite; a missing schema is
//! `not_found` for a read-only open; and a schema of another application
//! is `not_a_store` and left as it was.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use narad_store::suite::{batch, event};
use narad_store::{Damage, Store, StoreError};

/// Runs SQL on the server from a synchronous [`Tamper`] call.
fn execute(sql: String) {
    let url = common::url().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            c.batch_execute(&sql).await.unwrap();
        });
    })
    .join()
    .unwrap();
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Damage written straight into the store's tables, bypassing the store.
struct PostgresTamper;

impl narad_store::damage::Tamper for PostgresTamper {
    fn put_row(&self, path: &std::path::Path, session: &str, seq: u64, bytes: &[u8]) {
        let schema = common::schema_for(path);
        // Session ids of the suite are plain ASCII words.
        execute(format!(
            "UPDATE {schema}.events SET bytes = '\\x{}'::BYTEA WHERE session = '{session}' AND seq = {seq}",
            hex(bytes)
        ));
    }
}

narad_store::damage_suite!(common::open, PostgresTamper, unless common::ready());

async fn store_with_events(name: &str) -> (narad_store_postgres::PostgresStore, String) {
    let url = common::url().unwrap();
    let schema = format!("dmg_{name}_{}", std::process::id());
    execute(format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    let s = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap();
    let evs = (1..=3).map(|i| event("s", i, "a")).collect();
    s.append(batch("s", 0, evs)).await.unwrap();
    (s, schema)
}

fn is_wrong_type(r: Result<impl std::fmt::Debug, StoreError>) {
    match r {
        Err(StoreError::Corrupt {
            damage: Damage::WrongType,
            ..
        }) => {}
        other => panic!("expected a wrong_type corrupt error, got {other:?}"),
    }
}

/// Issue 13 finding 15: `Row::get` panicked on a column of another type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_of_the_wrong_type_are_corrupt_not_a_panic() {
    if !common::ready() {
        return;
    }
    let (s, schema) = store_with_events("types").await;
    execute(format!(
        "ALTER TABLE {schema}.heads ALTER COLUMN head TYPE TEXT USING head::TEXT;
         ALTER TABLE {schema}.events ALTER COLUMN bytes TYPE TEXT USING encode(bytes, 'escape');"
    ));
    // Fresh connections: cached statements were prepared for the old types.
    s.close().await.unwrap();
    let url = common::url().unwrap();
    let s = narad_store_postgres::PostgresStore::open(&url, &schema)
        .await
        .unwrap();
    is_wrong_type(s.head("s").await);
    let err = s.read_session("s", 0, 10).await.unwrap_err();
    assert_eq!(err.code(), "corrupt");
    assert!(err.to_string().contains("`s`"), "{err}");
    is_wrong_type(s.read_session("s", 0, 10).await);
    // A side record whose value is no longer bytes.
    execute(format!(
        "INSERT INTO {schema}.side VALUES (4, 's', '\\x00'::BYTEA);
         ALTER TABLE {schema}.side ALTER COLUMN value TYPE INT USING 7;"
    ));
    is_wrong_type(s.side(narad_store::SideSpace::Session, "s").await);
    s.close().await.unwrap();
    execute(format!("DROP SCHEMA {schema} CASCADE"));
}

/// A row inserted by hand at a key its bytes do not name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_inserted_row_at_another_key_is_corrupt() {
    if !common::ready() {
        return;
    }
    let (s, schema) = store_with_events("rows").await;
    execute(format!(
        "INSERT INTO {schema}.events (session, seq, event_id, bytes, root, rseq)
         SELECT session, 9, 'other', bytes, root, 9 FROM {schema}.events WHERE seq = 1"
    ));
    match s.read_session("s", 3, 10).await {
        Err(StoreError::Corrupt {
            damage: Damage::WrongPosition,
            position: Some(9),
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    s.close().await.unwrap();
    execute(format!("DROP SCHEMA {schema} CASCADE"));
}

/// Finding 9 on PostgreSQL: a read-only open never creates a schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_schema_is_not_found_for_a_read_only_open() {
    if !common::ready() {
        return;
    }
    let url = common::url().unwrap();
    let schema = format!("dmg_missing_{}", std::process::id());
    let err = narad_store_postgres::PostgresStore::open_existing(&url, &schema)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::NotFound {
            path: format!("schema {schema}")
        }
    );
    // Still not there: opening for reading created nothing.
    let err = narad_store_postgres::PostgresStore::open_existing(&url, &schema)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "not_found");
}

/// A schema that holds another application's tables is no store: neither
/// open adds this layout's tables to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_applications_schema_is_refused_and_left_as_it_was() {
    if !common::ready() {
        return;
    }
    let url = common::url().unwrap();
    let schema = format!("dmg_crm_{}", std::process::id());
    execute(format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
         CREATE TABLE {schema}.customers (id INT PRIMARY KEY, name TEXT);"
    ));
    let refused = StoreError::NotAStore {
        path: format!("schema {schema}"),
    };
    let open = narad_store_postgres::PostgresStore::open(&url, &schema).await;
    assert_eq!(open.err(), Some(refused.clone()));
    let open = narad_store_postgres::PostgresStore::open_existing(&url, &schema).await;
    assert_eq!(open.err(), Some(refused));
    // Still only the one table: had the open written, `meta` would be there.
    execute(format!(
        "DO $$ BEGIN IF (SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = '{schema}') <> 1
         THEN RAISE EXCEPTION 'the schema was written'; END IF; END $$;
         DROP SCHEMA {schema} CASCADE;"
    ));
}
