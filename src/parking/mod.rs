//! The relay's side of parking: the `hookrelay-control` consumer that
//! runs each drain step (`hookrelay_platform::parking` holds the engine,
//! `hookrelay_core::parking` its rules).

pub mod drain_consumer;
