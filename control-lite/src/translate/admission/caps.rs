//! Data-plane caps: `GatewayClassConfig.maxDataPlanesPerNamespace` bounds how many
//! dedicated data planes the Gateways of one class may hold in one namespace.
//!
//! Slots go oldest Gateway first (creation time, then UID), so a new Gateway takes
//! a free slot or is refused and never evicts one already serving, while lowering
//! the cap refuses the newest planes above it. Every Gateway asking for a plane
//! counts, whatever else is wrong with it: one being deleted, one whose
//! configuration does not resolve, one refused its tunnel. Counting only the
//! healthy ones would let a tenant free a slot by breaking one of their own
//! Gateways. `0` allows no dedicated plane at all. Start at [`over_cap`].

use super::seniority::Seniority;
use std::collections::BTreeMap;

/// One Gateway asking for a dedicated data plane.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) namespace: String,
    pub(crate) class: String,
    pub(crate) seniority: Seniority,
    /// Its class's cap; `None` for no cap.
    pub(crate) cap: Option<u32>,
}

/// For each request, in order, `Some(message)` when it is over its cap.
pub(crate) fn over_cap(requests: &[Request]) -> Vec<Option<String>> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by(|&a, &b| requests[a].seniority.cmp(&requests[b].seniority));
    let mut held: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    let mut out = vec![None; requests.len()];
    for index in order {
        let request = &requests[index];
        let Some(cap) = request.cap else {
            continue;
        };
        let count = held
            .entry((&request.class, &request.namespace))
            .or_default();
        if *count < cap {
            *count += 1;
        } else {
            out[index] = Some(if cap == 0 {
                format!(
                    "GatewayClass {} allows no dedicated data plane \
                     (maxDataPlanesPerNamespace is 0)",
                    request.class
                )
            } else {
                format!(
                    "namespace {} already holds the {cap} dedicated data plane(s) \
                     GatewayClass {} allows (maxDataPlanesPerNamespace); older Gateways \
                     keep theirs",
                    request.namespace, request.class
                )
            });
        }
    }
    out
}
