//! `einsum`: Einstein summation with NumPy's (and MLX's) subscripts, and
//! `einsum_path`: the order of pairwise contractions it follows (NumPy's
//! greedy path). Composed of `diagonal` (repeated labels), `sum`,
//! `transpose`, `reshape`, `broadcast_to` and `matmul` (integer operands
//! multiply and sum instead); no primitive of its own.
//!
//! ```
//! use weft::{ops, Array};
//! let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let t = ops::einsum("ii", &[a.clone()]).unwrap();
//! assert_eq!(t.item::<f32>().unwrap(), 5.0);
//! let ab = ops::einsum("ij,jk->ik", &[a.clone(), a]).unwrap();
//! assert_eq!(ab.to_vec::<f32>().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
//! ```

use super::{broadcast_to, diagonal, matmul, multiply, reshape, sum, transpose};
use crate::dtype::Dtype;
use crate::{bail, Array, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// A subscript: a letter, or axis `i` (counted from the right) of the
/// dimensions an ellipsis covers, so that ellipses broadcast right-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Label {
    Letter(char),
    Ellipsis(usize),
}

type Set = BTreeSet<Label>;
type Sizes = BTreeMap<Label, usize>;

/// Parsed subscripts: each operand's labels, the output's, each label's
/// size (the largest of its sizes: 1 broadcasts), and the text.
struct Spec {
    inputs: Vec<Vec<Label>>,
    output: Vec<Label>,
    sizes: Sizes,
    text: String,
}

/// The labels of one term (`ij`, `...ij`, `i...j`): letters before and
/// after the ellipsis, and whether there is one.
fn split_term(term: &str) -> Result<(Vec<char>, Vec<char>, bool)> {
    let (before, after, ell) = match term.find("...") {
        Some(i) => (&term[..i], &term[i + 3..], true),
        None => (term, "", false),
    };
    let letters = |s: &str| -> Result<Vec<char>> {
        s.chars()
            .map(|ch| {
                if ch == '.' {
                    bail!(InvalidArgument, "einsum: each term may hold one ellipsis '...', got {term:?}");
                }
                if !ch.is_ascii_alphabetic() {
                    bail!(InvalidArgument, "einsum: subscripts must be letters, got {ch:?}");
                }
                Ok(ch)
            })
            .collect()
    };
    Ok((letters(before)?, letters(after)?, ell))
}

/// `before`, the `width` ellipsis axes, `after`.
fn expand(before: &[char], width: usize, after: &[char]) -> Vec<Label> {
    let mut v: Vec<Label> = before.iter().map(|&ch| Label::Letter(ch)).collect();
    v.extend((0..width).rev().map(Label::Ellipsis));
    v.extend(after.iter().map(|&ch| Label::Letter(ch)));
    v
}

fn parse(subscripts: &str, shapes: &[&[usize]]) -> Result<Spec> {
    if shapes.is_empty() {
        bail!(InvalidArgument, "einsum: at least one operand is required");
    }
    let s: String = subscripts.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match s.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (&s[..], None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != shapes.len() {
        bail!(InvalidArgument, "einsum: {} operands for {} input subscripts in {subscripts:?}", shapes.len(), terms.len());
    }
    let mut inputs = Vec::with_capacity(terms.len());
    let mut width = 0;
    let mut sizes = Sizes::new();
    for (t, (term, shape)) in terms.iter().zip(shapes).enumerate() {
        let (before, after, ell) = split_term(term)?;
        let named = before.len() + after.len();
        if named > shape.len() || (!ell && named != shape.len()) {
            bail!(Shape, "einsum: subscripts {term:?} do not fit operand {t} of shape {shape:?}");
        }
        let w = shape.len() - named;
        width = width.max(w);
        let labels = expand(&before, w, &after);
        for (&l, &d) in labels.iter().zip(shape.iter()) {
            match sizes.get(&l).copied() {
                None | Some(1) => {
                    sizes.insert(l, d);
                }
                Some(s) if d != 1 && d != s => {
                    bail!(Shape, "einsum: subscript {} has size {s} in one operand and {d} in operand {t} of shape {shape:?}", show(&[l]))
                }
                Some(_) => {}
            }
        }
        inputs.push(labels);
    }
    let output = match rhs {
        Some(r) => {
            let (before, after, ell) = split_term(r)?;
            let out = expand(&before, if ell { width } else { 0 }, &after);
            let mut seen = Set::new();
            for l in &out {
                if !seen.insert(*l) {
                    bail!(InvalidArgument, "einsum: repeated subscript {} in the output {r:?}", show(&[*l]));
                }
                if !sizes.contains_key(l) {
                    bail!(InvalidArgument, "einsum: output subscript {} does not appear in the inputs", show(&[*l]));
                }
            }
            out
        }
        None => {
            // The ellipsis axes, then the letters used once, sorted.
            let mut count: BTreeMap<char, usize> = BTreeMap::new();
            for l in inputs.iter().flatten() {
                if let Label::Letter(ch) = l {
                    *count.entry(*ch).or_default() += 1;
                }
            }
            let once: Vec<char> = count.into_iter().filter(|&(_, n)| n == 1).map(|(ch, _)| ch).collect();
            expand(&[], width, &once)
        }
    };
    let text = format!("{lhs}->{}", rhs.map_or_else(|| show(&output), str::to_string));
    Ok(Spec { inputs, output, sizes, text })
}

/// Labels as subscripts (an ellipsis axis as `.`).
fn show(labels: &[Label]) -> String {
    labels
        .iter()
        .map(|l| match l {
            Label::Letter(ch) => *ch,
            Label::Ellipsis(_) => '.',
        })
        .collect()
}

fn size_of<'a>(labels: impl IntoIterator<Item = &'a Label>, sizes: &Sizes) -> u128 {
    labels.into_iter().fold(1u128, |acc, l| acc.saturating_mul(sizes[l] as u128))
}

/// NumPy's `_flop_count`.
fn flops(contract: &Set, inner: bool, terms: usize, sizes: &Sizes) -> u128 {
    size_of(contract, sizes).saturating_mul((terms.saturating_sub(1).max(1) + usize::from(inner)) as u128)
}

/// Contracting the terms at `positions`: (the result's labels, the terms
/// left with the result last, the labels summed away, every label involved).
fn find_contraction(positions: &[usize], sets: &[Set], output: &Set) -> (Set, Vec<Set>, Set, Set) {
    let mut contract = Set::new();
    let mut remain = output.clone();
    let mut rest = Vec::new();
    for (i, s) in sets.iter().enumerate() {
        if positions.contains(&i) {
            contract.extend(s.iter().copied());
        } else {
            rest.push(s.clone());
            remain.extend(s.iter().copied());
        }
    }
    let result: Set = remain.intersection(&contract).copied().collect();
    let removed: Set = contract.difference(&result).copied().collect();
    rest.push(result.clone());
    (result, rest, removed, contract)
}

/// A candidate pairwise contraction: its sort key `(-removed size, cost)`,
/// its positions, the terms after it.
type Candidate = ((i128, u128), (usize, usize), Vec<Set>);

struct Greedy<'a> {
    output: &'a Set,
    sizes: &'a Sizes,
    memory_limit: u128,
    naive_cost: u128,
}

impl Greedy<'_> {
    fn candidate(&self, pos: (usize, usize), sets: &[Set], path_cost: u128) -> Option<Candidate> {
        let (result, rest, removed, contract) = find_contraction(&[pos.0, pos.1], sets, self.output);
        let new_size = size_of(&result, self.sizes);
        if new_size > self.memory_limit {
            return None;
        }
        let old = size_of(&sets[pos.0], self.sizes).saturating_add(size_of(&sets[pos.1], self.sizes));
        let removed_size = old as i128 - new_size as i128;
        let cost = flops(&contract, !removed.is_empty(), 2, self.sizes);
        if path_cost.saturating_add(cost) > self.naive_cost {
            return None;
        }
        Some(((-removed_size, cost), pos, rest))
    }
}

/// NumPy's `_greedy_path`: contract the pair removing the most elements
/// (then the cheapest) first, outer products only when nothing else is
/// left, intermediates no larger than `memory_limit`.
fn greedy_path(mut sets: Vec<Set>, output: &Set, sizes: &Sizes, memory_limit: u128) -> Vec<Vec<usize>> {
    match sets.len() {
        1 => return vec![vec![0]],
        2 => return vec![vec![0, 1]],
        _ => {}
    }
    let all: Vec<usize> = (0..sets.len()).collect();
    let (_, _, removed, contract) = find_contraction(&all, &sets, output);
    let naive_cost = flops(&contract, !removed.is_empty(), sets.len(), sizes);
    let greedy = Greedy { output, sizes, memory_limit, naive_cost };
    let pairs = |n: usize| -> Vec<(usize, usize)> { (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).collect() };
    let mut to_try = pairs(sets.len());
    let mut known: Vec<Candidate> = Vec::new();
    let (mut path, mut path_cost) = (Vec::new(), 0u128);
    for _ in 0..sets.len() - 1 {
        for &pos in &to_try {
            if sets[pos.0].is_disjoint(&sets[pos.1]) {
                continue;
            }
            known.extend(greedy.candidate(pos, &sets, path_cost));
        }
        if known.is_empty() {
            for pos in pairs(sets.len()) {
                known.extend(greedy.candidate(pos, &sets, path_cost));
            }
            if known.is_empty() {
                path.push((0..sets.len()).collect());
                break;
            }
        }
        let mut best = 0;
        for (i, c) in known.iter().enumerate() {
            if c.0 < known[best].0 {
                best = i;
            }
        }
        // NumPy keeps the list's order (ties go to the earliest); the best
        // itself is dropped with the others touching its terms.
        let best = known[best].clone();
        known = update_others(known, &best);
        sets = best.2;
        let last = sets.len() - 1;
        to_try = (0..last).map(|i| (i, last)).collect();
        path.push(vec![best.1 .0, best.1 .1]);
        path_cost = path_cost.saturating_add(best.0 .1);
    }
    path
}

/// NumPy's `_update_other_results`: the candidates not touching `best`'s
/// terms, renumbered for the terms after it.
fn update_others(known: Vec<Candidate>, best: &Candidate) -> Vec<Candidate> {
    let (bx, by) = best.1;
    let after = |i: usize, a: usize, b: usize| i - usize::from(i > a) - usize::from(i > b);
    let merged = best.2.last().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (key, (x, y), mut sets) in known {
        if [x, y].contains(&bx) || [x, y].contains(&by) {
            continue;
        }
        sets.remove(after(by, x, y));
        sets.remove(after(bx, x, y));
        let at = sets.len() - 1;
        sets.insert(at, merged.clone());
        out.push((key, (after(x, bx, by), after(y, bx, by)), sets));
    }
    out
}

/// The contraction order of `einsum(subscripts, operands)` (NumPy's greedy
/// path, always pairwise as MLX's), and a summary of its cost.
pub fn einsum_path(subscripts: &str, operands: &[Array]) -> Result<(Vec<Vec<usize>>, String)> {
    let shapes: Vec<&[usize]> = operands.iter().map(|a| a.shape()).collect();
    let spec = parse(subscripts, &shapes)?;
    let path = plan(&spec);
    let sets: Vec<Set> = spec.inputs.iter().map(|t| t.iter().copied().collect()).collect();
    let out_set: Set = spec.output.iter().copied().collect();
    let every: Set = sets.iter().flatten().copied().collect();
    let inner = sets.iter().map(Set::len).sum::<usize>() > every.len();
    let naive = flops(&every, inner, sets.len(), &spec.sizes);
    let (mut cur, mut opt, mut scaling) = (sets, 0u128, 0usize);
    for step in &path {
        let mut pos = step.clone();
        pos.sort_unstable_by(|a, b| b.cmp(a));
        let (_, rest, removed, contract) = find_contraction(&pos, &cur, &out_set);
        opt = opt.saturating_add(flops(&contract, !removed.is_empty(), pos.len(), &spec.sizes));
        scaling = scaling.max(contract.len());
        cur = rest;
    }
    let mut info = String::new();
    let _ = writeln!(info, "  Complete contraction:  {}", spec.text);
    let _ = writeln!(info, "         Naive scaling:  {}", every.len());
    let _ = writeln!(info, "     Optimized scaling:  {scaling}");
    let _ = writeln!(info, "      Naive FLOP count:  {naive}");
    let _ = writeln!(info, "  Optimized FLOP count:  {opt}");
    Ok((path, info))
}

/// The greedy path under NumPy's memory limit (the largest operand or
/// output).
fn plan(spec: &Spec) -> Vec<Vec<usize>> {
    let sets: Vec<Set> = spec.inputs.iter().map(|t| t.iter().copied().collect()).collect();
    let out_set: Set = spec.output.iter().copied().collect();
    let limit = spec.inputs.iter().chain([&spec.output]).map(|t| size_of(t, &spec.sizes)).max().unwrap_or(1);
    greedy_path(sets, &out_set, &spec.sizes, limit)
}

/// Einstein summation over `operands` as `subscripts` says (NumPy's
/// grammar: letters, one `...` per term, `,` between operands, an optional
/// `->` output; without it the output is the ellipsis axes and then the
/// letters used once, sorted). Repeated letters in a term take diagonals;
/// sizes of 1 broadcast. An ellipsis left out of an explicit output is
/// summed, as MLX.
pub fn einsum(subscripts: &str, operands: &[Array]) -> Result<Array> {
    let shapes: Vec<&[usize]> = operands.iter().map(|a| a.shape()).collect();
    let spec = parse(subscripts, &shapes)?;
    let mut terms: Vec<(Array, Vec<Label>)> = Vec::with_capacity(operands.len());
    for (a, labels) in operands.iter().zip(&spec.inputs) {
        terms.push(diagonals(a.clone(), labels.clone())?);
    }
    let out_set: Set = spec.output.iter().copied().collect();
    let path = plan(&spec);
    for step in path {
        let mut pos = step;
        pos.sort_unstable_by(|a, b| b.cmp(a));
        let taken: Vec<(Array, Vec<Label>)> = pos.iter().map(|&p| terms.remove(p)).collect();
        let mut keep = out_set.clone();
        for (_, l) in &terms {
            keep.extend(l.iter().copied());
        }
        terms.push(contract(taken, &keep)?);
    }
    let (x, labels) = match terms.pop() {
        Some(t) if terms.is_empty() => t,
        _ => bail!(Internal, "einsum: the contraction path left {} operands", terms.len() + 1),
    };
    let (x, labels) = reduce(x, labels, &out_set)?;
    let perm: Vec<isize> = spec.output.iter().map(|l| labels.iter().position(|m| m == l).map_or(-1, |p| p as isize)).collect();
    if perm.contains(&-1) {
        bail!(Internal, "einsum: an output subscript was lost");
    }
    let x = transpose(&x, &perm)?;
    let shape: Vec<usize> = spec.output.iter().map(|l| spec.sizes[l]).collect();
    broadcast_to(&x, &shape)
}

/// `x` with each repeated label replaced by the diagonal over its axes.
fn diagonals(mut x: Array, mut labels: Vec<Label>) -> Result<(Array, Vec<Label>)> {
    while let Some((i, j)) = (0..labels.len()).find_map(|i| (i + 1..labels.len()).find(|&j| labels[j] == labels[i]).map(|j| (i, j))) {
        let (a, b) = (x.shape()[i], x.shape()[j]);
        if a != b {
            bail!(Shape, "einsum: repeated subscript {} spans axes of sizes {a} and {b}", show(&[labels[i]]));
        }
        x = diagonal(&x, 0, i as isize, j as isize)?;
        let l = labels[i];
        labels.remove(j);
        labels.remove(i);
        labels.push(l);
    }
    Ok((x, labels))
}

/// `x` summed over the labels not in `keep`.
fn reduce(x: Array, labels: Vec<Label>, keep: &Set) -> Result<(Array, Vec<Label>)> {
    let gone: Vec<isize> = (0..labels.len()).filter(|&i| !keep.contains(&labels[i])).map(|i| i as isize).collect();
    if gone.is_empty() {
        return Ok((x, labels));
    }
    let kept = labels.into_iter().filter(|l| keep.contains(l)).collect();
    Ok((sum(&x, gone, false)?, kept))
}

/// The terms contracted into one holding only labels in `keep`, pairwise
/// from the left.
fn contract(terms: Vec<(Array, Vec<Label>)>, keep: &Set) -> Result<(Array, Vec<Label>)> {
    let mut it = terms.into_iter();
    let Some(mut acc) = it.next() else { bail!(Internal, "einsum: an empty contraction") };
    let rest: Vec<_> = it.collect();
    for (i, (b, lb)) in rest.iter().enumerate() {
        let mut k = keep.clone();
        for (_, l) in &rest[i + 1..] {
            k.extend(l.iter().copied());
        }
        acc = pair(acc, (b.clone(), lb.clone()), &k)?;
    }
    reduce(acc.0, acc.1, keep)
}

/// `x` permuted to `order` and broadcast to `sizes` of those labels, with
/// size-1 axes for labels of `order` it lacks.
fn arrange(x: &Array, labels: &[Label], order: &[Label], sizes: &[usize]) -> Result<Array> {
    let present: Vec<isize> = order.iter().filter_map(|l| labels.iter().position(|m| m == l)).map(|p| p as isize).collect();
    let t = transpose(x, &present)?;
    let shape: Vec<isize> = order
        .iter()
        .map(|l| labels.iter().position(|m| m == l).map_or(1, |p| x.shape()[p] as isize))
        .collect();
    broadcast_to(&reshape(&t, &shape)?, sizes)
}

/// Two terms contracted: labels shared and kept are batch axes, shared and
/// not kept are summed (a matmul for floats), the others stay.
fn pair(a: (Array, Vec<Label>), b: (Array, Vec<Label>), keep: &Set) -> Result<(Array, Vec<Label>)> {
    let needs = |own: &[Label], other: &[Label]| -> Set { keep.iter().chain(other).copied().filter(|l| own.contains(l)).collect() };
    let (na, nb) = (needs(&a.1, &b.1), needs(&b.1, &a.1));
    let (x, la) = reduce(a.0, a.1, &na)?;
    let (y, lb) = reduce(b.0, b.1, &nb)?;
    let size = |l: &Label| -> usize {
        let sa = la.iter().position(|m| m == l).map_or(1, |p| x.shape()[p]);
        let sb = lb.iter().position(|m| m == l).map_or(1, |p| y.shape()[p]);
        sa.max(sb)
    };
    let batch: Vec<Label> = la.iter().filter(|l| lb.contains(l) && keep.contains(l)).copied().collect();
    let summed: Vec<Label> = la.iter().filter(|l| lb.contains(l) && !keep.contains(l)).copied().collect();
    let fa: Vec<Label> = la.iter().filter(|l| !lb.contains(l)).copied().collect();
    let fb: Vec<Label> = lb.iter().filter(|l| !la.contains(l)).copied().collect();
    let sizes_of = |ls: &[Label]| -> Vec<usize> { ls.iter().map(size).collect() };
    let (sbatch, sfa, ssum, sfb) = (sizes_of(&batch), sizes_of(&fa), sizes_of(&summed), sizes_of(&fb));
    let labels: Vec<Label> = [&batch[..], &fa, &fb].concat();
    let out_shape: Vec<isize> = [&sbatch[..], &sfa, &sfb].concat().iter().map(|&d| d as isize).collect();
    let dtype = Dtype::promote(x.dtype(), y.dtype());
    if dtype.is_float() {
        let order_a = [&batch[..], &fa, &summed].concat();
        let order_b = [&batch[..], &summed, &fb].concat();
        let xa = arrange(&x, &la, &order_a, &[&sbatch[..], &sfa, &ssum].concat())?;
        let yb = arrange(&y, &lb, &order_b, &[&sbatch[..], &ssum, &sfb].concat())?;
        let prod = |v: &[usize]| v.iter().product::<usize>() as isize;
        let (bt, mm, kk, nn) = (prod(&sbatch), prod(&sfa), prod(&ssum), prod(&sfb));
        let r = matmul(&reshape(&xa, &[bt, mm, kk])?, &reshape(&yb, &[bt, kk, nn])?)?;
        return Ok((reshape(&r, &out_shape)?, labels));
    }
    // Integers and bools: multiply, then sum the shared axes.
    let order = [&batch[..], &fa, &fb, &summed].concat();
    let all_sizes = [&sbatch[..], &sfa, &sfb, &ssum].concat();
    let xa = arrange(&x, &la, &order, &all_sizes)?;
    let yb = arrange(&y, &lb, &order, &all_sizes)?;
    let p = multiply(&xa, &yb)?;
    let first = labels.len();
    let r = if summed.is_empty() { p } else { sum(&p, (first..order.len()).map(|i| i as isize).collect::<Vec<_>>(), false)? };
    Ok((r, labels))
}
