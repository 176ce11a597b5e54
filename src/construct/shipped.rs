//! The patterns shipped with git-neo, compiled into the binary. A test checks that this list and
//! the `.md` files in `construct/` are the same set.

/// (name, markdown) for every shipped pattern, by name.
pub const SHIPPED: &[(&str, &str)] = &[
    ("bisect-a-regression", include_str!("../../construct/bisect-a-regression.md")),
    ("characterisation-tests", include_str!("../../construct/characterisation-tests.md")),
    ("lockfile-discipline", include_str!("../../construct/lockfile-discipline.md")),
    ("one-concern-per-commit", include_str!("../../construct/one-concern-per-commit.md")),
    ("pin-the-toolchain", include_str!("../../construct/pin-the-toolchain.md")),
    ("recall-before-acting", include_str!("../../construct/recall-before-acting.md")),
    ("record-failed-attempts", include_str!("../../construct/record-failed-attempts.md")),
    ("reproduce-before-fixing", include_str!("../../construct/reproduce-before-fixing.md")),
    ("reversible-migrations", include_str!("../../construct/reversible-migrations.md")),
    ("revert-first", include_str!("../../construct/revert-first.md")),
    ("secrets-stay-out", include_str!("../../construct/secrets-stay-out.md")),
    ("verify-agent-claims", include_str!("../../construct/verify-agent-claims.md")),
    ("worktree-per-agent", include_str!("../../construct/worktree-per-agent.md")),
];
