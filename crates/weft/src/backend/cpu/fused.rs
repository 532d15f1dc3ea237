//! `Fused`: a chain of elementwise steps ([`FusedProgram`]) in one pass.
//!
//! The output is computed [`CHUNK`] elements at a time. Each compute step
//! writes one chunk into a *register* (a small buffer of its dtype, reused
//! once its last reader ran), reading its operands from earlier registers or
//! straight from the inputs: a contiguous input is read in place, a strided
//! or broadcast one is gathered into a register per chunk, a scalar one is
//! filled into a register once. Only the last step's chunk goes to memory.
//! So the chain reads each input once and writes the output once, where the
//! unfused graph writes and reads back every intermediate array (and
//! allocates it).
//!
//! Each step calls its op's own per-element function through the op's file
//! (`unary_with`, `binary_with`, `select_with`, `astype_with` with the
//! chunk appliers below), on elements of the step's dtype, so results are
//! bit-identical to the unfused kernels' (16-bit floats round after every
//! step there and here). Large outputs are cut into parts of whole chunks run
//! on the worker pool, each with its own registers.

use super::astype::astype_with;
use super::binary::binary_with;
use super::select::select_with;
use super::strided::{Apply1, Apply2, Apply3};
use super::unary::unary_with;
use super::{dispatch, PARALLEL_MIN};
use crate::buffer::{host_vec, CpuBuffer, CpuData, CpuElement, Data, Reservation};
use crate::dtype::{Dtype, Element};
use crate::primitive::fused::FusedArg;
use crate::primitive::{FusedProgram, OutSpec, Primitive};
use crate::shape::{broadcast_shapes, numel, Layout};
use crate::{Error, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Elements per chunk: registers of a few KB stay in L1/L2 while every
/// step of the chain passes over them (see docs/benchmarks.md, "compile").
pub(crate) const CHUNK: usize = 1024;

/// Where a value comes from while a chunk is computed.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// Input `i`, read as its [`Feed`] says.
    Input(usize),
    /// A register.
    Reg(usize),
}

/// How an input is read.
#[derive(Clone, Debug)]
enum Feed {
    /// In place, from element `offset` (contiguous once broadcast).
    Contiguous(usize),
    /// One element everywhere, filled into register `reg` once per part.
    Scalar { offset: usize, reg: usize },
    /// Gathered into register `reg` for each chunk.
    Strided { layout: Layout, reg: usize },
}

/// A compute step, ready to run.
struct Exec {
    prim: Primitive,
    args: Vec<Src>,
    reg: usize,
    /// The operands' dtype (`AsType` converts from it; `Binary` reads it).
    in_dtype: Dtype,
    dtype: Dtype,
}

/// The program laid out for one call: registers and reads.
struct Plan {
    feeds: Vec<Feed>,
    execs: Vec<Exec>,
    registers: Vec<Dtype>,
    out: Src,
}

impl Plan {
    fn new(p: &FusedProgram, inputs: &[Data], shape: &[usize]) -> Result<Plan> {
        let mut registers: Vec<Dtype> = Vec::new();
        let mut feeds = Vec::with_capacity(inputs.len());
        for (i, d) in inputs.iter().enumerate() {
            let l = &d.layout;
            if broadcast_shapes(&l.shape, shape).ok().as_deref() != Some(shape) {
                return Err(Error::Kernel(format!("fused input {i} of shape {:?} for an output of {shape:?}", l.shape)));
            }
            if d.buffer.dtype() != p.inputs()[i] {
                return Err(Error::Kernel(format!("fused input {i} holds {}, the program reads {}", d.buffer.dtype(), p.inputs()[i])));
            }
            let b = l.broadcast_to(shape);
            feeds.push(if b.is_contiguous() {
                Feed::Contiguous(b.offset)
            } else if b.is_scalar_broadcast() {
                registers.push(d.buffer.dtype());
                Feed::Scalar { offset: b.offset, reg: registers.len() - 1 }
            } else {
                registers.push(d.buffer.dtype());
                Feed::Strided { layout: b, reg: registers.len() - 1 }
            });
        }
        let steps = p.steps();
        // Each step's value (broadcasts are their operand's), and the last
        // step that reads it.
        let mut value: Vec<Src> = Vec::with_capacity(steps.len());
        let mut last_read = vec![0usize; steps.len()];
        for (k, s) in steps.iter().enumerate() {
            for a in &s.args {
                if let FusedArg::Step(j) = *a {
                    last_read[j] = k;
                }
            }
        }
        // Broadcasts pass their readers on to their own operand.
        for k in (0..steps.len()).rev() {
            if let (Primitive::BroadcastTo, FusedArg::Step(j)) = (&steps[k].prim, steps[k].args[0]) {
                last_read[j] = last_read[j].max(last_read[k]);
            }
        }
        last_read[steps.len() - 1] = usize::MAX;
        let mut free: Vec<usize> = Vec::new();
        let mut execs = Vec::with_capacity(steps.len());
        let src = |a: FusedArg, value: &[Src]| match a {
            FusedArg::Input(i) => Src::Input(i),
            FusedArg::Step(j) => value[j],
        };
        let dtype_of = |a: FusedArg| match a {
            FusedArg::Input(i) => p.inputs()[i],
            FusedArg::Step(j) => steps[j].dtype,
        };
        for (k, s) in steps.iter().enumerate() {
            if matches!(s.prim, Primitive::BroadcastTo) {
                value.push(src(s.args[0], &value));
                continue;
            }
            let args: Vec<Src> = s.args.iter().map(|&a| src(a, &value)).collect();
            // A register of this dtype that no pending step still reads.
            let reg = match free.iter().position(|&r| registers[r] == s.dtype) {
                Some(i) => free.swap_remove(i),
                None => {
                    registers.push(s.dtype);
                    registers.len() - 1
                }
            };
            // Operands whose last reader this is free up after it (never
            // before: a step's output register is not one of its operands').
            for a in &s.args {
                if let FusedArg::Step(j) = *a {
                    if last_read[j] == k {
                        if let Src::Reg(r) = value[j] {
                            if !free.contains(&r) {
                                free.push(r);
                            }
                        }
                    }
                }
            }
            let in_dtype = dtype_of(s.args[s.args.len() - 1]);
            execs.push(Exec { prim: s.prim.clone(), args, reg, in_dtype, dtype: s.dtype });
            value.push(Src::Reg(reg));
        }
        let out = value[steps.len() - 1];
        Ok(Plan { feeds, execs, registers, out })
    }
}

/// A chunk of an operand: `len` elements of `data` from `start`.
#[derive(Clone, Copy)]
struct Operand<'a> {
    data: &'a CpuData,
    start: usize,
    len: usize,
}

impl<'a> Operand<'a> {
    fn slice<T: CpuElement>(self) -> Result<&'a [T]> {
        T::slice(self.data)
            .and_then(|s| s.get(self.start..self.start + self.len))
            .ok_or_else(|| Error::Internal(format!("fused operand holds {}, read as {}", self.data.dtype(), T::DTYPE)))
    }
}

fn dst_slice<U: CpuElement>(d: &mut CpuData, len: usize) -> Result<&mut [U]> {
    let held = d.dtype();
    U::slice_mut(d)
        .and_then(|s| s.get_mut(..len))
        .ok_or_else(|| Error::Internal(format!("fused register holds {held}, written as {}", U::DTYPE)))
}

/// One step on one chunk: the appliers the ops' files call with their
/// per-element functions.
struct Chunk1<'a> {
    x: Operand<'a>,
    dst: &'a mut CpuData,
}

impl Apply1 for Chunk1<'_> {
    type Out = ();
    fn apply<T: CpuElement, U: CpuElement>(self, f: impl Fn(T) -> U + Sync + Send + Copy) -> Result<()> {
        let x = self.x.slice::<T>()?;
        let d = dst_slice::<U>(self.dst, self.x.len)?;
        d.iter_mut().zip(x).for_each(|(d, &x)| *d = f(x));
        Ok(())
    }
}

struct Chunk2<'a> {
    a: Operand<'a>,
    b: Operand<'a>,
    dst: &'a mut CpuData,
}

impl Apply2 for Chunk2<'_> {
    type Out = ();
    fn apply<A: CpuElement, B: CpuElement, U: CpuElement>(self, f: impl Fn(A, B) -> U + Sync + Send + Copy) -> Result<()> {
        let (a, b) = (self.a.slice::<A>()?, self.b.slice::<B>()?);
        let d = dst_slice::<U>(self.dst, self.a.len)?;
        d.iter_mut().zip(a.iter().zip(b)).for_each(|(d, (&a, &b))| *d = f(a, b));
        Ok(())
    }
}

struct Chunk3<'a> {
    a: Operand<'a>,
    b: Operand<'a>,
    c: Operand<'a>,
    dst: &'a mut CpuData,
}

impl Apply3 for Chunk3<'_> {
    type Out = ();
    fn apply<A: CpuElement, B: CpuElement, C: CpuElement, U: CpuElement>(
        self,
        f: impl Fn(A, B, C) -> U + Sync + Send + Copy,
    ) -> Result<()> {
        let (a, b, c) = (self.a.slice::<A>()?, self.b.slice::<B>()?, self.c.slice::<C>()?);
        let d = dst_slice::<U>(self.dst, self.a.len)?;
        d.iter_mut().zip(a.iter().zip(b.iter().zip(c))).for_each(|(d, (&a, (&b, &c)))| *d = f(a, b, c));
        Ok(())
    }
}

/// A register: `CHUNK` elements of `dtype`, reserved against the memory limit.
fn register(dtype: Dtype) -> Result<(CpuData, Reservation)> {
    dispatch!(dtype, T => {
        let (mut v, r) = host_vec::<T>(CHUNK)?;
        v.resize(CHUNK, T::from_f64(0.0));
        Ok((T::wrap(v), r))
    })
}

/// Elements `start..start + dst.len()` (row-major) of `src` seen through `l`.
fn gather<T: CpuElement>(src: &[T], l: &Layout, start: usize, dst: &mut [T]) -> Result<()> {
    let nd = l.shape.len();
    let oob = || Error::Internal("fused input read out of its buffer".into());
    if nd == 0 {
        dst.fill(*src.get(l.offset).ok_or_else(oob)?);
        return Ok(());
    }
    let mut idx = vec![0usize; nd];
    let mut rem = start;
    let mut off = l.offset as isize;
    for d in (0..nd).rev() {
        idx[d] = rem % l.shape[d];
        rem /= l.shape[d];
        off += idx[d] as isize * l.strides[d];
    }
    let (inner, step) = (l.shape[nd - 1], l.strides[nd - 1]);
    let mut k = 0;
    while k < dst.len() {
        let run = (inner - idx[nd - 1]).min(dst.len() - k);
        let out = &mut dst[k..k + run];
        match step {
            0 => out.fill(*src.get(off as usize).ok_or_else(oob)?),
            1 => out.copy_from_slice(src.get(off as usize..off as usize + run).ok_or_else(oob)?),
            _ => {
                for (i, y) in out.iter_mut().enumerate() {
                    *y = *src.get((off + i as isize * step) as usize).ok_or_else(oob)?;
                }
            }
        }
        k += run;
        off += run as isize * step;
        idx[nd - 1] += run;
        if idx[nd - 1] == inner {
            // Carry into the outer axes.
            off -= inner as isize * step;
            idx[nd - 1] = 0;
            for d in (0..nd - 1).rev() {
                idx[d] += 1;
                off += l.strides[d];
                if idx[d] < l.shape[d] {
                    break;
                }
                off -= l.shape[d] as isize * l.strides[d];
                idx[d] = 0;
            }
        }
    }
    Ok(())
}

/// Runs `plan` over output elements `first..first + out.len()`, writing
/// every element of `out`.
fn run_part<U: CpuElement>(plan: &Plan, inputs: &[Data], first: usize, out: &mut [MaybeUninit<U>]) -> Result<()> {
    let mut regs = Vec::with_capacity(plan.registers.len());
    let mut _held = Vec::with_capacity(plan.registers.len());
    for &d in &plan.registers {
        let (r, res) = register(d)?;
        regs.push(r);
        _held.push(res);
    }
    for (f, d) in plan.feeds.iter().zip(inputs) {
        if let Feed::Scalar { offset, reg } = f {
            let data = &d.cpu_buffer().data;
            dispatch!(data.dtype(), T => {
                let v = *T::slice(data).and_then(|s| s.get(*offset)).ok_or_else(|| Error::Internal("fused scalar out of its buffer".into()))?;
                dst_slice::<T>(&mut regs[*reg], CHUNK)?.fill(v);
            });
        }
    }
    for (c, dst) in out.chunks_mut(CHUNK).enumerate() {
        let start = first + c * CHUNK;
        let len = dst.len();
        for (f, d) in plan.feeds.iter().zip(inputs) {
            if let Feed::Strided { layout, reg } = f {
                let data = &d.cpu_buffer().data;
                dispatch!(data.dtype(), T => {
                    let src = T::slice(data).ok_or_else(|| Error::Internal("fused input of another dtype".into()))?;
                    gather::<T>(src, layout, start, dst_slice::<T>(&mut regs[*reg], len)?)?;
                });
            }
        }
        for e in &plan.execs {
            // The output register is never one of the step's operands.
            let mut d = std::mem::replace(&mut regs[e.reg], CpuData::Bool(Vec::new()));
            let r = {
                let operand = |s: Src| -> Operand<'_> {
                    match s {
                        Src::Reg(r) => Operand { data: &regs[r], start: 0, len },
                        Src::Input(i) => match &plan.feeds[i] {
                            Feed::Contiguous(off) => Operand { data: &inputs[i].cpu_buffer().data, start: off + start, len },
                            Feed::Scalar { reg, .. } | Feed::Strided { reg, .. } => Operand { data: &regs[*reg], start: 0, len },
                        },
                    }
                };
                match &e.prim {
                    Primitive::Unary(op) => unary_with(*op, e.dtype, Chunk1 { x: operand(e.args[0]), dst: &mut d }),
                    Primitive::AsType => astype_with(e.in_dtype, e.dtype, Chunk1 { x: operand(e.args[0]), dst: &mut d }),
                    Primitive::Binary(op) => {
                        binary_with(*op, e.in_dtype, Chunk2 { a: operand(e.args[0]), b: operand(e.args[1]), dst: &mut d })
                    }
                    Primitive::Select => select_with(
                        e.dtype,
                        Chunk3 { a: operand(e.args[0]), b: operand(e.args[1]), c: operand(e.args[2]), dst: &mut d },
                    ),
                    p => Err(Error::Internal(format!("{} in a fused program", p.name()))),
                }
            };
            regs[e.reg] = d;
            r?;
        }
        let last = match plan.out {
            Src::Reg(r) => Operand { data: &regs[r], start: 0, len },
            Src::Input(i) => match &plan.feeds[i] {
                Feed::Contiguous(off) => Operand { data: &inputs[i].cpu_buffer().data, start: off + start, len },
                Feed::Scalar { reg, .. } | Feed::Strided { reg, .. } => Operand { data: &regs[*reg], start: 0, len },
            },
        };
        let src = last.slice::<U>()?;
        if src.len() != dst.len() {
            return Err(Error::Internal("fused chunk of the wrong length".into()));
        }
        dst.iter_mut().zip(src).for_each(|(d, &s)| {
            d.write(s);
        });
    }
    Ok(())
}

pub(crate) fn fused(p: &FusedProgram, inputs: &[Data], out: OutSpec<'_>) -> Result<CpuBuffer> {
    if inputs.len() != p.inputs().len() {
        return Err(Error::Kernel(format!("a fused program of {} inputs got {}", p.inputs().len(), inputs.len())));
    }
    if out.dtype != p.dtype() {
        return Err(Error::Kernel(format!("a fused program of {} asked for {}", p.dtype(), out.dtype)));
    }
    let plan = Plan::new(p, inputs, out.shape)?;
    let n = numel(out.shape);
    if n == 0 {
        // Nothing to compute (and an empty input has no element to fill a
        // scalar register with).
        return dispatch!(out.dtype, U => CpuBuffer::try_build::<U>(0, |_| Ok(())));
    }
    dispatch!(out.dtype, U => CpuBuffer::try_build::<U>(n, |v| {
        let spare = &mut v.spare_capacity_mut()[..n];
        if n >= PARALLEL_MIN && crate::scheduler::on_pool() {
            // About four parts per worker, each a whole number of chunks.
            let per = n.div_ceil(4 * rayon::current_num_threads()).div_ceil(CHUNK).max(1) * CHUNK;
            spare.par_chunks_mut(per).enumerate().try_for_each(|(i, part)| run_part::<U>(&plan, inputs, i * per, part))?;
        } else {
            run_part::<U>(&plan, inputs, 0, spare)?;
        }
        // SAFETY: `spare` is the first `n` elements of `v`'s capacity. The
        // parts above partition it, `run_part` cuts each part into chunks
        // (`chunks_mut`, which cover it) and writes every element of every
        // chunk (a source of another length is an error, returned before
        // this line). So all `n` elements are initialized here.
        unsafe { v.set_len(n) };
        Ok(())
    }))
}
