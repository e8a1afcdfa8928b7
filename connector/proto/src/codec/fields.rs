//! Reading fields into owned Rust values, and what a failed read means.
//!
//! The generated readers are lazy: a malformed pointer or a pointer of the wrong
//! kind shows up when its field is read. [`field_error`] names the field and sorts
//! the failure: a pointer that is well formed but not what the schema says (a list
//! where a struct belongs, a union member or enumerant the schema does not have) is
//! [`Error::Schema`]; anything else (bounds, limits, segments) is
//! [`Error::Capnp`] (with the `capnp` crate's error as its source).

use capnp::ErrorKind;
use capnp::dynamic_value;
use capnp::introspect::{Introspect, TypeVariant};

use crate::Error;

/// The error for a failed read of `structure` (a field name such as
/// `ConnectRequest.dest`).
pub(crate) fn field_error(structure: &'static str, error: capnp::Error) -> Error {
    let mismatch = matches!(
        error.kind,
        ErrorKind::EnumValueOrUnionDiscriminantNotPresent(_)
            | ErrorKind::ExpectedAListOrBlob
            | ErrorKind::ExpectedAPointerListButGotAListOfDataOnlyStructs
            | ErrorKind::ExpectedAPrimitiveListButGotAListOfPointerOnlyStructs
            | ErrorKind::FoundBitListWhereStructListWasExpected
            | ErrorKind::FoundStructListWhereBitListWasExpected
            | ErrorKind::InlineCompositeListWithNonStructElementsNotSupported
            | ErrorKind::MessageContainsListPointerOfNonBytesWhereDataWasExpected
            | ErrorKind::MessageContainsListPointerOfNonBytesWhereTextWasExpected
            | ErrorKind::MessageContainsListWithIncompatibleElementType
            | ErrorKind::MessageContainsNonCapabilityPointerWhereCapabilityPointerWasExpected
            | ErrorKind::MessageContainsNonListPointerWhereDataWasExpected
            | ErrorKind::MessageContainsNonListPointerWhereListPointerWasExpected
            | ErrorKind::MessageContainsNonListPointerWhereTextWasExpected
            | ErrorKind::MessageContainsNonStructPointerWhereStructPointerWasExpected
            | ErrorKind::MessageContainsTextThatIsNotNULTerminated
            | ErrorKind::TextBlobMissingNULTerminator
    );
    if mismatch {
        Error::Schema {
            structure,
            problem: error.to_string(),
        }
    } else {
        Error::Capnp {
            context: Some(structure),
            source: error,
        }
    }
}

/// A read of `structure`, its failure mapped by [`field_error`].
pub(crate) fn field<T>(structure: &'static str, value: capnp::Result<T>) -> Result<T, Error> {
    value.map_err(|e| field_error(structure, e))
}

/// A `Text` field as an owned string; null reads as empty.
pub(crate) fn text(
    structure: &'static str,
    value: capnp::Result<capnp::text::Reader<'_>>,
) -> Result<String, Error> {
    field(structure, value)?
        .to_string()
        .map_err(|_| Error::Schema {
            structure,
            problem: "text is not valid utf-8".to_owned(),
        })
}

/// A `Data` field as owned bytes; null reads as empty.
pub(crate) fn data(
    structure: &'static str,
    value: capnp::Result<capnp::data::Reader<'_>>,
) -> Result<Vec<u8>, Error> {
    Ok(field(structure, value)?.to_vec())
}

/// A list length as the `u32` the wire carries. The lists encoded here come from
/// our own values and never reach `u32::MAX` elements; a longer one would be cut
/// there rather than wrap.
pub(crate) fn list_len(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// Writes `value` to the enum field `name` of a struct builder, whether or not the
/// enum `E` names that value: a decoded value the schema does not know re-encodes as
/// it came (generated setters only take the enumerants).
pub(crate) fn set_enum<'a, E: Introspect>(
    builder: impl Into<dynamic_value::Builder<'a>>,
    name: &str,
    value: u16,
) -> capnp::Result<()> {
    let TypeVariant::Enum(schema) = E::introspect().which() else {
        return Err(capnp::Error::failed(format!("{name} is not an enum")));
    };
    let dynamic_value::Builder::Struct(mut builder) = builder.into() else {
        return Err(capnp::Error::failed(format!(
            "{name}: not a struct builder"
        )));
    };
    let value = dynamic_value::Enum::new(value, schema.into());
    builder.set_named(name, value.into())
}
