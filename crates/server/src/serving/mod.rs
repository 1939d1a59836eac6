//! Serving queries: the handler every transport calls, and the policies
//! around the engine's answer (RRL, cookies and limits in `guard`, dnstap,
//! TSIG-signed queries).

pub(crate) mod dnstap;
pub mod guard;
pub(crate) mod handler;
pub(crate) mod signed;
