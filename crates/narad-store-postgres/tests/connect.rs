//! A server that cannot be reached is named (user, host, port, database),
//! never with the password, and the innermost cause is given. Needs no
//! server: nothing listens on port 1 of the loopback.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use narad_store::StoreError;
use narad_store_postgres::PostgresStore;

#[tokio::test]
async fn an_unreachable_server_is_named_without_its_password() {
    for open_existing in [false, true] {
        let url = "postgres://narad:SECRET-PW@127.0.0.1:1/journal";
        let e = if open_existing {
            PostgresStore::open_existing(url, "narad").await.err()
        } else {
            PostgresStore::open(url, "narad").await.err()
        };
        let Some(StoreError::Backend(message)) = e else {
            panic!("{e:?}");
        };
        assert!(
            message.starts_with("cannot connect to postgres://narad@127.0.0.1:1/journal: "),
            "{message}"
        );
        assert!(!message.contains("SECRET"), "{message}");
        assert!(!message.contains("creating a new object"), "{message}");
    }
}

/// A URL tokio-postgres refuses names what is wrong with it (the option,
/// the byte), not only "invalid connection string", and no password.
#[tokio::test]
async fn a_malformed_url_names_what_is_wrong() {
    for (url, says) in [
        (
            "postgres://u:SECRET-PW@127.0.0.1:1/db?frobnicate=1",
            "unknown option `frobnicate`",
        ),
        (
            "postgres://u:SECRET-PW@127.0.0.1:1/db?sslmode=SECRET-MODE",
            "invalid value for option `sslmode`",
        ),
        (
            "postgres://u:SECRET-PW@127.0.0.1:1/db?connect_timeout=soon",
            "invalid value for option `connect_timeout`",
        ),
    ] {
        let e = PostgresStore::open(url, "narad").await.err();
        let Some(StoreError::Backend(message)) = e else {
            panic!("{e:?}");
        };
        assert_eq!(
            message,
            format!("invalid PostgreSQL connection URL: {says}")
        );
    }
}
