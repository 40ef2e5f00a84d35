//! The durable client-execution records, typed: executor (lease) records,
//! the list of executors, and execution tokens.
//!
//! Each record carries `"v": 1`; a record stored before versions existed
//! has no `v` and reads as version 1 (its fields are the same). A missing
//! or ill-typed field, or another version, is
//! [`EngineError::CorruptRecord`] naming the record, never a default.

use std::time::SystemTime;

use bytes::Bytes;
use narad_core::model::ControlPayload;
use narad_store::{Expect, SideSpace, SideWrite, Store};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::control;
use crate::command_loop::side;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::timestamp;
use crate::timers::{TimerKind, TimerRecord};

/// The version this engine writes and reads.
const VERSION: u32 = 1;

fn version_one() -> u32 {
    VERSION
}

/// The key of the list of every executor ever seen, in `Lease`.
pub(crate) const EXECUTORS_KEY: &str = "*";

/// A record of `space` under `key` that cannot be read. A token's key is
/// a credential: only its kind prefix is named.
pub(crate) fn corrupt(space: SideSpace, key: &str) -> EngineError {
    let key = match space {
        SideSpace::Token => key.split('-').next().unwrap_or_default().to_owned() + "-…",
        _ => key.to_owned(),
    };
    EngineError::CorruptRecord {
        space: space_name(space),
        key,
    }
}

fn space_name(space: SideSpace) -> &'static str {
    match space {
        SideSpace::Lease => "lease",
        SideSpace::Token => "token",
        _ => "side",
    }
}

/// A timestamp field: the protocol's RFC 3339 form, a typed time in memory.
mod time {
    use super::*;

    pub(super) fn serialize<Z: Serializer>(t: &SystemTime, s: Z) -> Result<Z::Ok, Z::Error> {
        s.serialize_str(&timestamp(*t))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }

    pub(super) mod nullable {
        use super::*;

        pub(crate) fn serialize<Z: Serializer>(
            t: &Option<SystemTime>,
            s: Z,
        ) -> Result<Z::Ok, Z::Error> {
            match t {
                Some(t) => s.serialize_str(&timestamp(*t)),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<SystemTime>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|text| humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom))
                .transpose()
        }
    }
}

fn decode<T: for<'de> Deserialize<'de>>(
    space: SideSpace,
    key: &str,
    bytes: &[u8],
    version: impl Fn(&T) -> u32,
) -> Result<T, EngineError> {
    let rec: T = serde_json::from_slice(bytes).map_err(|_| corrupt(space, key))?;
    if version(&rec) != VERSION {
        return Err(corrupt(space, key));
    }
    Ok(rec)
}

fn encode<T: Serialize>(space: SideSpace, key: &str, rec: &T) -> Result<Vec<u8>, EngineError> {
    serde_json::to_vec(rec).map_err(|_| corrupt(space, key))
}

/// A finish accepted for a token: exactly what `tool.call.finished` carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AcceptedFinish {
    pub(crate) outcome: Value,
    pub(crate) response: Value,
}

/// `Token/<token>`: one client execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TokenRecord {
    #[serde(default = "version_one")]
    pub(crate) v: u32,
    pub(crate) executor: String,
    /// The lease the token was issued under (it stays valid for its token
    /// even once superseded).
    pub(crate) lease: String,
    pub(crate) session_id: String,
    pub(crate) tool_call_id: String,
    pub(crate) run_id: String,
    #[serde(with = "time")]
    pub(crate) expires_at: SystemTime,
    pub(crate) tool_name: String,
    pub(crate) args: Value,
    /// Present (possibly `null`) in every record; `null` until accepted.
    #[serde(deserialize_with = "Option::deserialize")]
    pub(crate) finish: Option<AcceptedFinish>,
    /// The closure code when the call closed without a finish.
    #[serde(deserialize_with = "Option::deserialize")]
    pub(crate) closed: Option<String>,
}

impl TokenRecord {
    /// Neither finished nor closed.
    pub(crate) fn open(&self) -> bool {
        self.finish.is_none() && self.closed.is_none()
    }

    /// The conditional write replacing `raw` (what was read) with `self`.
    pub(crate) fn replace(&self, token: &str, raw: &Bytes) -> Result<SideWrite, EngineError> {
        Ok(side(
            SideSpace::Token,
            token,
            Expect::Equals(raw.clone()),
            encode(SideSpace::Token, token, self)?,
        ))
    }

    /// The write creating this record.
    pub(crate) fn create(&self, token: &str) -> Result<SideWrite, EngineError> {
        Ok(side(
            SideSpace::Token,
            token,
            Expect::Absent,
            encode(SideSpace::Token, token, self)?,
        ))
    }
}

impl TokenRecord {
    /// The due-index entry of this token's expiry (keyed by its tool call:
    /// the token is a credential and stays out of keys).
    pub(crate) fn timer(&self, token: &str) -> TimerRecord {
        let mut t = TimerRecord::new(
            TimerKind::Token,
            &self.session_id,
            &self.tool_call_id,
            self.expires_at,
        );
        t.token = Some(token.to_owned());
        t
    }
}

/// The due-index entry of `executor`'s lease expiring at `expires`.
pub(crate) fn lease_timer(executor: &str, expires: SystemTime) -> TimerRecord {
    TimerRecord::new(TimerKind::Lease, "", executor, expires)
}

/// `Lease/<executor>` as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecutorDoc {
    #[serde(default = "version_one")]
    v: u32,
    #[serde(deserialize_with = "Option::deserialize")]
    lease_id: Option<String>,
    #[serde(with = "time::nullable")]
    lease_expires_at: Option<SystemTime>,
    pending: Vec<String>,
    /// `[session, run, waitId]` paused for this executor's absence.
    paused: Vec<(String, String, String)>,
}

/// An executor's durable record, with the bytes it was read from (the
/// guard of its replacement).
#[derive(Debug, Clone, Default)]
pub(crate) struct ExecutorRecord {
    raw: Option<Bytes>,
    pub(crate) lease: Option<String>,
    pub(crate) lease_expires: Option<SystemTime>,
    pub(crate) pending: Vec<String>,
    /// `(session, run, waitId)` paused for this executor's absence.
    pub(crate) paused: Vec<(String, String, String)>,
}

impl ExecutorRecord {
    fn decode(executor: &str, raw: Option<Bytes>) -> Result<Self, EngineError> {
        let Some(b) = raw else {
            return Ok(Self::default());
        };
        let doc: ExecutorDoc = decode(SideSpace::Lease, executor, &b, |d: &ExecutorDoc| d.v)?;
        Ok(Self {
            lease: doc.lease_id,
            lease_expires: doc.lease_expires_at,
            pending: doc.pending,
            paused: doc.paused,
            raw: Some(b),
        })
    }

    pub(crate) fn valid_lease(&self, now: SystemTime) -> Option<&str> {
        match (&self.lease, self.lease_expires) {
            (Some(l), Some(t)) if now < t => Some(l),
            _ => None,
        }
    }

    /// The conditional write replacing this record.
    pub(crate) fn write(&self, executor: &str) -> Result<SideWrite, EngineError> {
        let expect = match &self.raw {
            Some(b) => Expect::Equals(b.clone()),
            None => Expect::Absent,
        };
        let doc = ExecutorDoc {
            v: VERSION,
            lease_id: self.lease.clone(),
            lease_expires_at: self.lease_expires,
            pending: self.pending.clone(),
            paused: self.paused.clone(),
        };
        Ok(side(
            SideSpace::Lease,
            executor,
            expect,
            encode(SideSpace::Lease, executor, &doc)?,
        ))
    }
}

/// Decodes the list of every executor ever seen.
pub(crate) fn decode_executors(raw: Option<&Bytes>) -> Result<Vec<String>, EngineError> {
    match raw {
        Some(b) => serde_json::from_slice(b).map_err(|_| corrupt(SideSpace::Lease, EXECUTORS_KEY)),
        None => Ok(Vec::new()),
    }
}

/// Encodes the list of every executor ever seen.
pub(crate) fn encode_executors(list: &[String]) -> Result<Vec<u8>, EngineError> {
    encode(SideSpace::Lease, EXECUTORS_KEY, &list)
}

impl<S: Store + 'static> Engine<S> {
    pub(crate) async fn executor(&self, executor: &str) -> Result<ExecutorRecord, EngineError> {
        let raw = self.inner.store.side(SideSpace::Lease, executor).await?;
        ExecutorRecord::decode(executor, raw)
    }

    /// A token record and the bytes it was read from.
    pub(crate) async fn token(
        &self,
        token: &str,
    ) -> Result<Option<(Bytes, TokenRecord)>, EngineError> {
        match self.inner.store.side(SideSpace::Token, token).await? {
            Some(b) => {
                let t = decode(SideSpace::Token, token, &b, |t: &TokenRecord| t.v)?;
                Ok(Some((b, t)))
            }
            None => Ok(None),
        }
    }
}

/// The `client.tool.execute` of a token (first delivery or redelivery).
pub(crate) fn execute_message(token: &str, t: &TokenRecord) -> Bytes {
    control(&ControlPayload::ClientToolExecute {
        client_executor_id: t.executor.clone(),
        lease_id: t.lease.clone(),
        execution_token: token.to_owned(),
        execution_token_expires_at: timestamp(t.expires_at),
        tool_call_id: t.tool_call_id.clone(),
        tool_name: t.tool_name.clone(),
        args: t.args.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD_TOKEN: &str = r#"{"args":{"q":1},"closed":null,"executor":"desktop-1","expiresAt":"2026-05-28T20:31:40.000Z","finish":null,"lease":"lease-1","runId":"run-1","sessionId":"s","toolCallId":"tool-1","toolName":"search"}"#;

    #[test]
    fn a_record_stored_before_versions_reads_as_version_one() {
        let t: TokenRecord = decode(
            SideSpace::Token,
            "token-1",
            OLD_TOKEN.as_bytes(),
            |t: &TokenRecord| t.v,
        )
        .unwrap();
        assert_eq!((t.v, t.executor.as_str(), t.open()), (1, "desktop-1", true));
        let old_lease = br#"{"leaseExpiresAt":"2026-05-28T20:31:40.000Z","leaseId":"lease-1","paused":[["s","r","w"]],"pending":["token-1"]}"#;
        let r = ExecutorRecord::decode("desktop-1", Some(Bytes::from_static(old_lease))).unwrap();
        assert_eq!(r.lease.as_deref(), Some("lease-1"));
        assert_eq!(r.paused, vec![("s".into(), "r".into(), "w".into())]);
    }

    #[test]
    fn a_missing_or_ill_typed_field_names_the_record_instead_of_defaulting() {
        let missing = OLD_TOKEN.replace(r#""sessionId":"s","#, "");
        let ill_typed = OLD_TOKEN.replace(r#""toolCallId":"tool-1""#, r#""toolCallId":7"#);
        let no_finish = OLD_TOKEN.replace(r#""finish":null,"#, "");
        let bad_time = OLD_TOKEN.replace("2026-05-28T20:31:40.000Z", "tomorrow");
        let future = OLD_TOKEN.replace(r#"{"args""#, r#"{"v":2,"args""#);
        for bytes in [missing, ill_typed, no_finish, bad_time, future] {
            let err = decode(
                SideSpace::Token,
                "token-abcdef",
                bytes.as_bytes(),
                |t: &TokenRecord| t.v,
            )
            .unwrap_err();
            assert_eq!(err.code(), "corrupt_record");
            let shown = err.to_string();
            assert!(
                shown.contains("token") && !shown.contains("abcdef"),
                "{shown}"
            );
        }
        let err = ExecutorRecord::decode(
            "desktop-1",
            Some(Bytes::from_static(br#"{"leaseId":null}"#)),
        )
        .unwrap_err();
        assert_eq!(
            err,
            EngineError::CorruptRecord {
                space: "lease",
                key: "desktop-1".into()
            }
        );
    }

    #[test]
    fn records_round_trip_with_their_version() {
        let t: TokenRecord = decode(
            SideSpace::Token,
            "token-1",
            OLD_TOKEN.as_bytes(),
            |t: &TokenRecord| t.v,
        )
        .unwrap();
        let bytes = encode(SideSpace::Token, "token-1", &t).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["v"], 1);
        assert_eq!(v["expiresAt"], "2026-05-28T20:31:40.000Z");
        let again = decode(SideSpace::Token, "token-1", &bytes, |t: &TokenRecord| t.v).unwrap();
        assert_eq!(again, t);
    }
}
