use super::*;

fn name(s: &str) -> Name {
    s.parse().unwrap()
}

fn member(n: &str, coo: Option<&str>) -> Member {
    Member {
        name: name(n),
        id: format!("id-{n}"),
        group: None,
        coo: coo.map(name),
    }
}

/// Performs a plan as the runtime does (every change taken).
fn perform(m: &mut Membership, catalog: &Name, plan: &Plan) {
    for g in &plan.gone {
        m.removed(g);
    }
    for a in &plan.added {
        m.added(catalog, a.clone());
    }
}

fn names(v: &[Member]) -> Vec<String> {
    v.iter().map(|m| m.name.to_string()).collect()
}

/// A first version adds every member, the same again nothing, a member
/// dropped is removed; a member configured as a zone is left alone.
#[test]
fn members_come_and_go_with_the_catalog() {
    let cat = name("cat.example.");
    let configured: HashSet<Name> = [name("conf.example.")].into();
    let mut m = Membership::new();
    let v1 = vec![
        member("a.example.", None),
        member("B.example.", None),
        member("conf.example.", None),
    ];
    let plan = m.plan(&cat, v1.clone(), &configured);
    assert_eq!(names(&plan.added), ["a.example.", "B.example."]);
    assert!(plan.gone.is_empty());
    assert_eq!(
        plan.reports,
        [Report::Configured {
            catalog: cat.clone(),
            member: name("conf.example.")
        }]
    );
    perform(&mut m, &cat, &plan);
    assert_eq!(m.len(), 2);
    assert_eq!(
        m.catalog_of(&name("b.example.")),
        Some(&cat),
        "held lowercase"
    );
    let again = m.plan(&cat, v1, &configured);
    assert!(again.added.is_empty() && again.gone.is_empty());
    let plan = m.plan(&cat, vec![member("b.example.", None)], &configured);
    assert_eq!(plan.gone, [name("a.example.")]);
    assert!(
        plan.added.is_empty(),
        "b is held already, whatever its case"
    );
    perform(&mut m, &cat, &plan);
    assert_eq!(m.len(), 1);
}

/// A member listed by two catalogs stays with the first unless the first
/// names the second in `coo`: then it moves (removed, added afresh).
#[test]
fn a_member_moves_only_by_change_of_ownership() {
    let (a, b) = (name("a.cat."), name("b.cat."));
    let none = HashSet::new();
    let mut m = Membership::new();
    let plan = m.plan(&a, vec![member("z.example.", None)], &none);
    perform(&mut m, &a, &plan);
    let plan = m.plan(&b, vec![member("z.example.", None)], &none);
    assert!(plan.added.is_empty() && plan.gone.is_empty());
    assert_eq!(
        plan.reports,
        [Report::BelongsElsewhere {
            catalog: b.clone(),
            member: name("z.example."),
            owner: a.clone()
        }]
    );
    // A's entry now names B.
    let plan = m.plan(&a, vec![member("z.example.", Some("B.cat."))], &none);
    assert!(
        plan.added.is_empty() && plan.gone.is_empty(),
        "held: no change"
    );
    m.added(&a, member("z.example.", Some("B.cat.")));
    let plan = m.plan(&b, vec![member("z.example.", None)], &none);
    assert_eq!(plan.gone, [name("z.example.")]);
    assert_eq!(names(&plan.added), ["z.example."]);
    assert!(matches!(plan.reports[..], [Report::MovesHere { .. }]));
    perform(&mut m, &b, &plan);
    assert_eq!(m.catalog_of(&name("z.example.")), Some(&b));
    // A's next version without it removes nothing of B's.
    assert!(m.plan(&a, Vec::new(), &none).gone.is_empty());
}
