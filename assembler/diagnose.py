"""Empty-result diagnosis: add the query's constraints AC by AC and name the first one that empties the join."""

from __future__ import annotations

from collections.abc import Callable

from assembler.assembly_records import Diagnosis, PrefixCheck
from assembler.plan import Group, Node, Query, SubQuery, Triple, Union, Values
from assembler.writer import write_sparql
from kb_dumps.profiles import KBProfile
from kb_dumps.stage_errors import KBQAError

# Items that bind variables (an AC made only of FILTER / MINUS / BIND is a condition on earlier ones).
_BINDING = (Triple, Values, Union, SubQuery, Group)
# ask(sparql) -> True / False, or None when the store could not say (timeout, error).
AskFn = Callable[[str], "bool | None"]


def ac_blocks(group: Group) -> list[tuple[str | None, list[Node]]]:
    """The top-level items of a WHERE group, gathered by AC in order of first appearance."""
    blocks: list[tuple[str | None, list[Node]]] = []
    index: dict[str | None, int] = {}
    for item in group.items:
        ac = item.ac
        if ac not in index:
            index[ac] = len(blocks)
            blocks.append((ac, []))
        blocks[index[ac]][1].append(item)
    return blocks


def _ask_items(items: list[Node], profile: KBProfile, mapping: dict[str, str], ask: AskFn) -> bool | None:
    res = write_sparql(Query(form="ask", where=Group(list(items))), profile, mapping)
    if not res.ok:
        return None
    try:
        return ask(res.sparql)  # type: ignore[arg-type]
    except KBQAError:
        return None


def diagnose_empty(plan: Query, profile: KBProfile, mapping: dict[str, str], ask: AskFn) -> Diagnosis:
    """Ask each prefix of the WHERE clause (AC by AC, in the order written); the first AC whose addition
    makes the prefix match nothing is named. Each check is an ASK, so it stops at the first match."""
    blocks = ac_blocks(plan.where)
    checked: list[PrefixCheck] = []
    prefix: list[Node] = []
    for ac, items in blocks:
        prefix = prefix + items
        matches = _ask_items(prefix, profile, mapping, ask)
        checked.append({"ac": ac, "matches": matches})
        if matches is None:
            return Diagnosis(None, f"could not check the constraints up to {ac or 'the pattern'} (the check failed "
                             "or ran out of time); the cause of the empty result is unknown", checked)
        if matches:
            continue
        label = ac or "an unlabelled part of the pattern"
        if len(prefix) == len(items):
            return Diagnosis(ac, f"{label} matches nothing in the KB on its own: check its relation and the "
                             "grounding of its placeholders", checked, alone_matches=False)
        alone = _ask_items(items, profile, mapping, ask) if any(isinstance(i, _BINDING) for i in items) else None
        earlier = ", ".join(str(a) for a, _ in blocks[:len(checked) - 1] if a)
        if alone is None:
            msg = (f"{label} is a condition (FILTER / MINUS / …) that no answer of the constraints before it "
                   f"({earlier}) satisfies: check its values, their datatype, and the variables it names")
        elif alone is False:
            msg = (f"{label} matches nothing in the KB on its own (the constraints before it, {earlier}, do "
                   "match): check its relation, direction and the grounding of its placeholders")
        else:
            msg = (f"{label} empties the join: the constraints before it ({earlier}) match, and {label} "
                   "matches on its own, but no answer satisfies "
                   "both; check the variables they share and the direction of the relation")
        return Diagnosis(ac, msg, checked, alone_matches=alone)
    mods = [name for name, on in (("HAVING", plan.having), ("OFFSET", plan.offset)) if on]
    why = f" ({', '.join(mods)} removed every row)" if mods else ""
    return Diagnosis(None, "every constraint matches together, yet the query returns no answer"
                     f"{why}: the projected variables may be unbound, or an aggregate gives 0", checked)
