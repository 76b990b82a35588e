//! Kind bytes of the format kept as read (operations, object kinds, channel kinds): a reader of a
//! later version's trace keeps the codes it does not know, and every stage asks the code what it
//! is instead of comparing numbers.

/// A kind byte of the format kept as read: a reader of a later version's trace keeps the codes it
/// does not know. In JSON it is the kind's name (`kind#N` when unknown), in the binary tables
/// (postcard, not human-readable) its code.
macro_rules! coded {
    ($(#[$doc:meta])* $name:ident, $kind:ident, $unknown:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u8);

        impl $name {
            /// The code as the trace held it.
            pub const fn code(self) -> u8 {
                self.0
            }

            /// From a code read from a trace, known or not.
            pub const fn from_code(code: u8) -> $name {
                $name(code)
            }

            /// The kind, when this version knows the code.
            pub const fn known(self) -> Option<$kind> {
                $kind::from_code(self.0)
            }

            /// Whether this is kind `k`.
            pub fn is(self, k: $kind) -> bool {
                self.0 == k.code()
            }
        }

        impl From<$kind> for $name {
            fn from(k: $kind) -> $name {
                $name(k.code())
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self.known() {
                    Some(k) => f.write_str(k.name()),
                    None => write!(f, concat!($unknown, "#{}"), self.0),
                }
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                if s.is_human_readable() {
                    s.collect_str(self)
                } else {
                    s.serialize_u8(self.0)
                }
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                if !d.is_human_readable() {
                    return <u8 as ::serde::Deserialize>::deserialize(d).map($name);
                }
                let name = <String as ::serde::Deserialize>::deserialize(d)?;
                if let Some(k) = $kind::ALL.iter().find(|k| k.name() == name) {
                    return Ok($name::from(*k));
                }
                name.strip_prefix(concat!($unknown, "#"))
                    .and_then(|n| n.parse().ok())
                    .map($name)
                    .ok_or_else(|| {
                        serde::de::Error::custom(format!(
                            concat!("unknown ", $unknown, " {:?}"),
                            name
                        ))
                    })
            }
        }
    };
}

pub(crate) use coded;
