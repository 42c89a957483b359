"""Which versions a schema copy registers, in what order, and what it refuses (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.model.schemas import Reference, Schema, SchemaVersion, same_schema
from kmigrate.schemas.plan import RegistryView, differences, plan_copy


def avro(name: str, *refs: Reference) -> Schema:
    return Schema("AVRO", f'{{"type": "record", "name": "{name}", "fields": []}}', refs)


def version(subject: str, number: int, schema_id: int, schema: Schema, **kw: bool) -> SchemaVersion:
    return SchemaVersion(subject, number, schema_id, schema, **kw)


def test_every_version_is_registered_with_its_id_and_the_target_then_equals_the_source():
    source = RegistryView(
        (version("a-value", 1, 7, avro("A")), version("a-value", 2, 9, avro("A2"))),
        "FULL",
        {"a-value": "NONE"},
        {"a-value": "READONLY"},
    )
    plan = plan_copy(source, RegistryView(()))
    assert [(v.subject, v.version, v.id) for v in plan.register] == [
        ("a-value", 1, 7),
        ("a-value", 2, 9),
    ]
    assert not plan.conflicts
    assert plan.importing == ["a-value"]
    assert plan.compatibility == {None: "FULL", "a-value": "NONE"}
    assert plan.modes == {"a-value": "READONLY"}
    copied = RegistryView(source.versions, "FULL", {"a-value": "NONE"}, {"a-value": "READONLY"})
    assert differences(source, copied) == []
    assert plan_copy(source, copied).empty


def test_references_are_registered_before_the_versions_that_use_them():
    ref = Reference("com.x.Common", "common", 1)
    uses = version("a-value", 1, 3, avro("A", ref))
    common = version("common", 1, 8, avro("Common"))
    plan = plan_copy(RegistryView((uses, common)), RegistryView(()))
    assert [v.subject for v in plan.register] == ["common", "a-value"]
    missing = plan_copy(RegistryView((uses,)), RegistryView(()))
    assert missing.conflicts == [
        "subject a-value version 1 (id 3): its reference common version 1 is on neither registry"
    ]


def test_a_target_holding_another_schema_under_an_id_is_refused():
    source = RegistryView((version("a-value", 1, 7, avro("A")),))
    taken = RegistryView((version("other", 1, 7, avro("B")),))
    assert plan_copy(source, taken).conflicts == [
        "subject a-value version 1 (id 7): the target holds another schema under id 7"
    ]
    same_id_same_schema = RegistryView((version("other", 1, 7, avro("A")),))
    assert plan_copy(source, same_id_same_schema).conflicts == []


def test_a_target_holding_the_same_schema_under_another_id_is_refused():
    source = RegistryView((version("a-value", 1, 7, avro("A")),))
    target = RegistryView((version("other", 1, 12, avro("A")),))
    (line,) = plan_copy(source, target).conflicts
    assert "the same schema under id 12" in line


def test_a_subject_version_with_another_id_on_the_target_is_refused():
    source = RegistryView((version("a-value", 1, 7, avro("A")),))
    target = RegistryView((version("a-value", 1, 8, avro("A")),))
    assert plan_copy(source, target).conflicts == [
        "subject a-value version 1 (id 7): the target holds id 8 there"
    ]


def test_spacing_and_key_order_do_not_make_schemas_differ():
    a = Schema("AVRO", '{"type":"record","name":"A","fields":[]}')
    b = Schema("AVRO", '{\n  "name": "A",\n  "type": "record", "fields": [ ]\n}')
    assert same_schema(a, b)
    assert not same_schema(a, Schema("JSON", a.text))


def test_soft_deleted_versions_are_registered_then_deleted_again():
    gone = version("a-value", 1, 7, avro("A"), deleted=True)
    plan = plan_copy(RegistryView((gone,)), RegistryView(()))
    assert plan.register == [gone] and plan.delete == [gone]
    live_there = RegistryView((version("a-value", 1, 7, avro("A")),))
    assert plan_copy(RegistryView((gone,)), live_there).delete == [gone]
    assert differences(RegistryView((gone,)), live_there) == [
        "subject a-value version 1 (id 7) is deleted on the source, not the target"
    ]


def test_a_subject_left_in_import_mode_by_a_killed_copy_gets_its_mode_back():
    held = (version("a-value", 1, 7, avro("A")),)
    source = RegistryView(held)
    interrupted = RegistryView(held, modes={"a-value": "IMPORT"})
    plan = plan_copy(source, interrupted)
    assert plan.register == [] and plan.modes == {"a-value": None}
    assert differences(source, interrupted) == [
        "subject a-value mode is not set on the source, IMPORT on the target"
    ]


names = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def registries(draw: st.DrawFn) -> RegistryView:
    """Up to 12 versions over 4 subjects, some referring to earlier ones."""
    versions: list[SchemaVersion] = []
    for schema_id in range(1, draw(st.integers(0, 12)) + 1):
        subject = draw(names)
        number = 1 + sum(1 for v in versions if v.subject == subject)
        refs = tuple(
            Reference(f"r{i}", v.subject, v.version)
            for i, v in enumerate(draw(st.lists(st.sampled_from(versions), max_size=2)))
            if versions
        ) if versions else ()  # fmt: skip
        versions.append(version(subject, number, schema_id, avro(f"S{schema_id}", *refs)))
    return RegistryView(tuple(draw(st.permutations(versions))))


@given(registries())
def test_an_empty_target_gets_every_version_each_after_its_references(source: RegistryView):
    plan = plan_copy(source, RegistryView(()))
    assert not plan.conflicts
    assert sorted(plan.register, key=lambda v: v.id) == sorted(source.versions, key=lambda v: v.id)
    seen: set[tuple[str, int]] = set()
    for v in plan.register:
        assert all((r.subject, r.version) in seen for r in v.schema.references)
        seen.add((v.subject, v.version))
    assert differences(source, RegistryView(tuple(plan.register))) == []
