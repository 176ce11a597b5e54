//! The frame's examples: identities, predicates, things and objects read, and comparisons.

use super::*;

fn rel(old: &str, new: &str) -> Relation {
    compare(&frame(old), &frame(new)).relation
}

#[test]
fn identity_is_not_a_value() {
    assert_eq!(frame("[D1:3] Caroline: I went to a support group yesterday").identity.len(), 2);
    for (a, b) in [
        ("[D1:3] Caroline: I went to a support group yesterday", "[D1:9] Caroline: I went to a pottery class"),
        ("decision number 1 about the caching layer", "decision number 2 about the caching layer"),
        ("Step 1: run the migrations", "Step 2: run the migrations again"),
        ("#412 is blocked by the flaky test", "#413 is blocked by the flaky test"),
        ("INC-101 status: resolved", "INC-102 status: open"),
        ("PR 88 needs one approval", "PR 89 needs two approvals"),
        ("Migration 0042 adds the users table", "Migration 0043 adds the orders table"),
        ("2024-05-01: the deploy target is Heroku", "2024-06-01: the deploy target is Fly.io"),
        ("Melanie: my favourite colour is blue", "Caroline: my favourite colour is green"),
    ] {
        assert_eq!(rel(a, b), Relation::Unrelated, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
    }
}

#[test]
fn the_same_thing_means_the_whole_subject() {
    for (a, b) in [
        ("The billing service uses Postgres 14", "The analytics service uses Postgres 14"),
        ("PR reviews need two approvals in the core repo", "PR reviews need one approval in the docs repo"),
        ("The search index is rebuilt every night at 02:00 UTC", "The sitemap is rebuilt every night at 03:00 UTC"),
        ("Idempotency keys are stored in Redis for 24 hours", "A Redis failover lost idempotency keys"),
        ("The transaction service runs on port 8080", "The transport service runs on port 9090"),
        ("Seattle office, Building A, Room 302", "Portland office, Building C, Conference Room 1"),
        ("Copyright (c) 2020 Jane Doe", "Copyright (c) 2015 John Roe"),
        ("It makes it possible to compress integers", "It makes it easy to parse JSON"),
        ("The billing service uses Postgres 14", "The billing service uses Redis 7"),
        ("The billing service uses Postgres", "The billing service uses Redis"),
        ("We use tokio 1.0", "We use serde 1.0"),
        ("I went to a support group yesterday", "I went to a pottery class yesterday"),
        ("WASI P1/P2 does not define a default temporary directory", "WASI P1/P2 does not have file permissions."),
        ("The MSRV is increased to 1.85.", "The MSRV is increased to 1.71."),
        ("packed fact 1", "packed fact 2"),
        (
            "Sadness is not an emotion that I like to experience.",
            "Sadness is not an emotion that I would like to experience.",
        ),
        ("MSRV was increased to 1.71 to support windows-sys v0.61.", "MSRV was updated to 1.74"),
    ] {
        assert_ne!(rel(a, b), Relation::Update, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
    }
    assert_eq!(frame("The billing service uses Postgres 14").thing, [stem("billing"), stem("services")]);
    assert_eq!(frame("The billing service uses Postgres 14").object_mask, ["<n>", "<v>"]);
}

#[test]
fn updates_of_one_thing_are_recognised() {
    for (a, b) in [
        ("Mobile Team allocated to Project Phoenix", "Mobile Team reallocated to Project Alpha"),
        ("Purchase Order #4521 approved for $50,000", "Purchase Order #4521 CANCELLED due to budget freeze"),
        ("approved 18 months renewal for Acme Supplies", "do not renew Acme Supplies; pending legal review"),
        ("CASE-5678 resolution: resolved with workaround", "CASE-5678 status changed: escalated to tier 2"),
        ("CASE-5678 status changed: escalated to tier 2", "CASE-5678 status changed: escalated to tier 3"),
        (
            "Government Contract terms: net-30, standard pricing",
            "Government Contract terms updated: net-60, volume discount 10%",
        ),
        ("API Migration deadline: January 15, 2026", "API Migration deadline moved to January 20, 2026"),
        ("Travel Policy: 3 days per week maximum", "Travel Policy updated: updated policy v2"),
        ("25% discount approved for Umbrella Corp", "discount for Umbrella Corp revoked; margin requirements"),
        (
            "approved purchase of Software License for $25000",
            "purchase of Software License cancelled; duplicate request",
        ),
        ("discount for Initech revoked; policy violation", "discount for Initech revoked; VP rescinded approval"),
        ("The deploy target is Heroku", "The deploy target is Fly.io"),
        ("The billing service uses Postgres 14", "The billing service uses Postgres 15"),
        (
            "The search index is rebuilt every night at 02:00 UTC",
            "The search index is rebuilt every night at 03:00 UTC",
        ),
        ("The billing service uses Postgres 14", "The billing service now uses Redis"),
        ("We release with blue green deploys on Fridays", "We release with blue green deploys on Thursdays"),
        ("We always release with blue green deploys on Fridays", "We release with blue green deploys on Mondays"),
        ("The replica points to db-1.internal", "The replica points to db-2.internal"),
    ] {
        assert_eq!(rel(a, b), Relation::Update, "{a} / {b}: {:?} {:?}", frame(a), frame(b));
    }
}

#[test]
fn updates_in_plain_language_are_caught() {
    for (a, b, want) in [
        (
            "The search cluster runs Elasticsearch 7",
            "The search cluster was upgraded to Elasticsearch 8",
            Relation::Update,
        ),
        (
            "The API quota is 1000 requests per minute",
            "The API quota was raised to 5000 requests per minute",
            Relation::Update,
        ),
        ("The kickoff meeting starts on March 3", "The kickoff meeting was moved to March 10", Relation::Update),
        ("Background jobs go to the default queue", "Background jobs now go to the priority queue", Relation::Update),
        ("The CI pipeline uses Jenkins", "The CI pipeline switched from Jenkins to GitHub Actions", Relation::Update),
        ("The MSRV is 1.56", "Bump the MSRV to 1.61", Relation::Update),
        (
            "The minimum supported Rust version is 1.60",
            "The minimum supported Rust version was bumped to 1.70",
            Relation::Update,
        ),
        ("The frontend is deployed to Netlify", "The frontend was moved to Vercel", Relation::Update),
        ("Logs are kept for 30 days", "Logs are no longer kept", Relation::Update),
        (
            "The payments service is called paysvc",
            "The payments service was renamed to billing-core",
            Relation::MaybeUpdate,
        ),
        (
            "The search cluster runs on 3 nodes",
            "The search cluster was upgraded to Elasticsearch 8",
            Relation::MaybeUpdate,
        ),
    ] {
        assert_eq!(rel(a, b), want, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
    }
}

#[test]
fn events_and_cases_are_not_states() {
    for (a, b) in [
        ("The search cluster was upgraded to Elasticsearch 8", "The search cluster runs Elasticsearch 9"),
        // A clause after a headline's colon is a statement of its own.
        (
            "Review note on src/db/cache.py: inventory sync reorders items after pagination",
            "Review note on src/db/cache.py: email renderer emits duplicate events",
        ),
        // A condition is part of the thing.
        (
            "The CLI argument parser returns stale data when a batch exceeds ten thousand rows",
            "The CLI argument parser returns HTTP 500 instead of 404 when the network flaps briefly",
        ),
        ("The importer skips rows if the header is missing", "The importer skips rows if the file is empty"),
    ] {
        assert_eq!(rel(a, b), Relation::Unrelated, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
    }
    // Two reports of a change are two events: never replaced, at most asked about.
    for (a, b) in [
        ("Bump the MSRV to 1.61", "Bump the MSRV to 1.70"),
        ("The MSRV was raised to 1.61", "The MSRV was raised to 1.70"),
        ("Bump the MSRV to 1.61", "Bump serde to 1.0.200"),
    ] {
        assert_ne!(rel(a, b), Relation::Update, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
    }
    // Told with a subject, a change is a state: the next one replaces it.
    assert_eq!(
        rel("API Migration deadline moved to January 20, 2026", "API Migration deadline moved to January 31, 2026"),
        Relation::Update
    );
    // A value after the colon still makes a slot.
    assert_eq!(rel("Feature freeze: March 3", "Feature freeze: March 10"), Relation::Update);
}

#[test]
fn the_same_thing_with_something_else_said_is_for_the_writer() {
    for (a, b) in [
        ("The billing service uses Postgres 14", "The billing service uses a read replica"),
        ("DashMap puts great effort into performance", "DashMap puts little effort into performance"),
    ] {
        assert_eq!(rel(a, b), Relation::MaybeUpdate, "{a} / {b}: {:?}", compare(&frame(a), &frame(b)));
    }
    assert_eq!(
        rel("DashMap puts great effort into performance", "DashMap gladly accepts contributions!"),
        Relation::Unrelated
    );
    assert_eq!(rel("struct Foo { id: u32 }", "struct Foo { name: String }"), Relation::Unrelated);
    assert_eq!(
        rel("Backend Squad allocated to Project Beta", "Backend Squad allocated to Project Beta"),
        Relation::Unrelated
    );
}

#[test]
fn only_a_rewording_may_be_replaced_by_similarity() {
    let r = |a: &str, b: &str| rewording(&frame(a), &frame(b));
    assert!(r("All timestamps are stored in UTC", "Store every timestamp as UTC"));
    assert!(!r(
        "You may have noticed that when the divisor is known at compile time, your compiler transforms it",
        "Unfortunately if the divisor is unknown at compile time, the compiler cannot use this trick."
    ));
    assert!(!r("[x] copy-on-write memory maps", "[x] read-only memory maps"));
    assert!(!r(
        "AHash is intended for use in in-memory hashmaps",
        "aHash is not recommended for use other than in-memory maps"
    ));
    assert!(!r("The DateTime type is timezone-aware", "The Local timezone works with the DateTime type"));
    assert!(!r("[D1:3] Ann: I am doing well", "[D1:5] Ann: I am doing well"));
    assert!(!r("Use Postgres 15 for the main database", "Use PostgreSQL 16 for the main database"));
    assert!(!r("True if any of the selectors is true", "True if all of the selectors are true"));
    assert!(!r("Complex is better than complicated.", "Simple is better than complex."));
    assert!(!r("you are a bad husband", "you are a bad wife"));
    assert!(!r("You are jealous", "Are you jealous"));
    assert!(!r("i have read many books.", "have you read many books"));
    assert!(r("Do you feel emotions", "Do you feel emotions?"));
}

#[test]
fn stems_meet_without_meeting_neighbours() {
    assert_eq!(stem("approval"), stem("approved"));
    assert_eq!(stem("approve"), stem("approved"));
    assert_eq!(stem("services"), stem("service"));
    assert_eq!(stem("renewal"), stem("renew"));
    assert_eq!(stem("cancelled"), stem("cancel"));
    assert_ne!(stem("transaction"), stem("transport"));
    assert_ne!(stem("config"), stem("confirm"));
}

#[test]
fn a_slot_normalises_into_a_key() {
    assert_eq!(slot_key("  Mobile   Team /Project ").as_deref(), Ok("mobile team / project"));
    assert!(slot_key("mobile team").is_err());
    assert!(slot_key("a / b / c").is_err());
    assert!(slot_key(" / project").unwrap_err().contains("subject / predicate"));
}
