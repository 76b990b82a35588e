//! Names for the library's fieldless option enums (a table to export, a lock mode): each gets
//! `ALL`, `name`, `Display` and `FromStr` from one list of names, so that a caller can parse and
//! print them without the library knowing how they are given (the command line wraps them).

/// A name that is none of an enum's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}`: not a {what} (expected one of: {})", expected.join(", "))]
pub struct UnknownName {
    /// What was being named (`table`, `lock mode`).
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// The names there are.
    pub expected: &'static [&'static str],
}

/// Implements `ALL`, `name`, `Display` and `FromStr` (error [`UnknownName`]) for a fieldless
/// enum, from each variant's name.
#[macro_export]
macro_rules! named {
    ($ty:ident, $what:literal { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The value's name, which `FromStr` reads back.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::choice::UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == s)
                    .ok_or_else(|| $crate::choice::UnknownName {
                        what: $what,
                        name: s.to_owned(),
                        expected: &[$($name),+],
                    })
            }
        }
    };
}

#[cfg(test)]
// The macro makes its items `pub`, as the library's enums need; this one is private.
#[allow(unreachable_pub)]
mod tests {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Pick {
        One,
        TwoWords,
    }
    named!(Pick, "pick" { One => "one", TwoWords => "two-words" });

    #[test]
    fn names_read_back_and_others_are_refused_with_the_list() {
        for &p in Pick::ALL {
            assert_eq!(p.to_string().parse::<Pick>(), Ok(p));
        }
        let e = "three".parse::<Pick>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "`three`: not a pick (expected one of: one, two-words)"
        );
    }
}
