//! `einsum(equation, operands)`, computed the way torch's ATen einsum computes it, out of
//! differentiable views, sums, products and `bmm`.
//!
//! torch's einsum has no node of its own (it is a composite op), so its graph is the graph of
//! the ops it calls: following the same steps gives the same `grad_fn` names (ViewBackward0
//! after a contraction, PermuteBackward0 for a transpose, SumBackward1 for a reduction, ...)
//! and the same error texts. The steps:
//! 1. parse the labels of each operand and of the output (implicit output: the labels seen
//!    once, in order A-Z then a-z, after the broadcast ellipsis dims);
//! 2. align every operand to one dim order: output dims, then contracted dims (a repeated
//!    label takes a diagonal, missing labels are unsqueezed, then a permute);
//! 3. contract operands left to right, two at a time (`sumproduct_pair`: dims present in only
//!    one operand are summed away first, the rest becomes one `bmm`), then sum out or view away
//!    what remains of the contracted dims.
//!
//! With three or more operands torch contracts left to right as well unless the opt_einsum
//! package is installed (it is not part of torch's requirements); see docs/divergences.md.

use crate::ops::formulas as fm;
use crate::error::{Error, Result};
use crate::ops::linalg::bmm;
use crate::ops::reduce::sum;
use crate::ops::views;
use crate::tensor::Tensor;
use std::collections::VecDeque;

const LETTERS: usize = 26;
const LABELS: usize = 2 * LETTERS;
/// The code of "..." among the labels of an operand.
const ELLIPSIS: usize = LABELS;

fn err(msg: String) -> Error {
    Error::Runtime(msg)
}

/// [A-Z] -> 0..26, [a-z] -> 26..52.
fn subscript(c: u8) -> usize {
    if c.is_ascii_uppercase() { (c - b'A') as usize } else { (c - b'a') as usize + LETTERS }
}

fn label(s: usize) -> char {
    if s < LETTERS { (b'A' + s as u8) as char } else { (b'a' + (s - LETTERS) as u8) as char }
}

fn as_i64(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&d| d as i64).collect()
}

/// Parses the input side: the labels of each operand (ELLIPSIS for "...").
fn parse_inputs(lhs: &[u8], num_ops: usize) -> Result<Vec<Vec<usize>>> {
    let mut labels = vec![Vec::new(); num_ops];
    let (mut op, mut ellipsis_seen) = (0usize, false);
    let mut i = 0;
    while i < lhs.len() {
        match lhs[i] {
            b' ' => {}
            b'.' => {
                if ellipsis_seen {
                    return Err(err(format!("einsum(): found '.' for operand {} for which an ellipsis was already found", op)));
                }
                if !(i + 2 < lhs.len() && lhs[i + 1] == b'.' && lhs[i + 2] == b'.') {
                    return Err(err(format!("einsum(): found '.' for operand {} that is not part of any ellipsis", op)));
                }
                i += 2;
                labels[op].push(ELLIPSIS);
                ellipsis_seen = true;
            }
            b',' => {
                op += 1;
                if op >= num_ops {
                    return Err(err("einsum(): fewer operands were provided than specified in the equation".into()));
                }
                ellipsis_seen = false;
            }
            c if c.is_ascii_alphabetic() => labels[op].push(subscript(c)),
            _ => {
                return Err(err(format!(
                    "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                    i
                )))
            }
        }
        i += 1;
    }
    if op + 1 != num_ops {
        return Err(err("einsum(): more operands were provided than specified in the equation".into()));
    }
    Ok(labels)
}

/// The dim order every operand is aligned to.
struct Plan {
    /// Position of each label in the aligned order (-1: unused).
    perm_index: Vec<i64>,
    /// Dims of the output (they come first), and of all aligned dims.
    out_dims: usize,
    all_dims: usize,
    /// Where the ellipsis dims start, and how many there are.
    ell_index: usize,
    ell_dims: usize,
}

fn plan(equation: &[u8], arrow: Option<usize>, labels: &[Vec<usize>], operands: &[Tensor]) -> Result<Plan> {
    let mut count = vec![0usize; LABELS];
    let mut ell_dims = 0i64;
    for (i, (labs, op)) in labels.iter().zip(operands).enumerate() {
        let ndim = op.ndim() as i64;
        let mut n = labs.len() as i64;
        let has_ellipsis = labs.contains(&ELLIPSIS);
        for &l in labs {
            if l == ELLIPSIS {
                n -= 1;
            } else {
                count[l] += 1;
            }
        }
        if has_ellipsis {
            ell_dims = ell_dims.max(ndim - n);
        }
        let ok = if has_ellipsis { n <= ndim } else { n == ndim };
        if !ok {
            return Err(err(format!(
                "einsum(): the number of subscripts in the equation ({}) {} ({}) for operand {}{}",
                n,
                if has_ellipsis { "is more than the number of dimensions" } else { "does not match the number of dimensions" },
                ndim,
                i,
                if has_ellipsis { "" } else { " and no ellipsis was given" }
            )));
        }
    }
    let ell_dims = ell_dims as usize;
    let mut perm_index = vec![-1i64; LABELS];
    let (mut next, mut ell_index, mut ell_in_output) = (0usize, 0usize, false);
    match arrow {
        None => {
            next = ell_dims;
            ell_in_output = true;
            for l in 0..LABELS {
                if count[l] == 1 {
                    perm_index[l] = next as i64;
                    next += 1;
                }
            }
        }
        Some(a) => {
            let rhs = &equation[a + 2..];
            let mut i = 0;
            while i < rhs.len() {
                match rhs[i] {
                    b' ' => {}
                    b'.' => {
                        if ell_in_output {
                            return Err(err("einsum(): found '.' for output but an ellipsis (...) was already found".into()));
                        }
                        if !(i + 2 < rhs.len() && rhs[i + 1] == b'.' && rhs[i + 2] == b'.') {
                            return Err(err("einsum(): found '.' for output that is not part of any ellipsis (...)".into()));
                        }
                        i += 2;
                        ell_index = next;
                        next += ell_dims;
                        ell_in_output = true;
                    }
                    c if c.is_ascii_alphabetic() => {
                        let s = subscript(c);
                        if count[s] == 0 || perm_index[s] != -1 {
                            let what = if perm_index[s] > -1 { "appears more than once in the output" } else { "does not appear in the equation for any input operand" };
                            return Err(err(format!("einsum(): output subscript {} {}", c as char, what)));
                        }
                        perm_index[s] = next as i64;
                        next += 1;
                    }
                    _ => {
                        return Err(err(format!(
                            "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                            a + 2 + i
                        )))
                    }
                }
                i += 1;
            }
        }
    }
    let out_dims = next;
    if !ell_in_output {
        ell_index = next;
        next += ell_dims;
    }
    for l in 0..LABELS {
        if count[l] > 0 && perm_index[l] == -1 {
            perm_index[l] = next as i64;
            next += 1;
        }
    }
    Ok(Plan { perm_index, out_dims, all_dims: next, ell_index, ell_dims })
}

/// Step 2: each operand with its diagonals taken, its missing dims unsqueezed, permuted to the
/// plan's order; also how many operands have each aligned dim with a size other than 1.
fn align(plan: &Plan, labels: &[Vec<usize>], operands: &[Tensor]) -> Result<(VecDeque<Tensor>, Vec<usize>)> {
    let mut label_size = vec![1usize; LABELS];
    let mut ell_sizes = vec![1usize; plan.ell_dims];
    let mut dim_counts = vec![0usize; plan.all_dims];
    let mut ops = VecDeque::with_capacity(operands.len());
    for (i, (labs, operand)) in labels.iter().zip(operands).enumerate() {
        let mut op = operand.clone();
        let mut permutation = vec![-1i64; plan.all_dims];
        let mut dim = 0usize;
        for &s in labs {
            if s == ELLIPSIS {
                let covered = operand.ndim() - (labs.len() - 1);
                for j in plan.ell_dims - covered..plan.ell_dims {
                    let size = op.shape()[dim];
                    if size != 1 {
                        if ell_sizes[j] != 1 && ell_sizes[j] != size {
                            return Err(err(format!(
                                "einsum(): dimension {} covered by ellipsis in operand {}has size {} which does not broadcast with previously seen ellipsis with size {} for the respective dimension",
                                dim, i, size, ell_sizes[j]
                            )));
                        }
                        ell_sizes[j] = size;
                        dim_counts[plan.ell_index + j] += 1;
                    }
                    permutation[plan.ell_index + j] = dim as i64;
                    dim += 1;
                }
            } else if permutation[plan.perm_index[s] as usize] == -1 {
                let size = op.shape()[dim];
                if size != 1 {
                    if label_size[s] != 1 && label_size[s] != size {
                        return Err(err(format!(
                            "einsum(): subscript {} has size {} for operand {} which does not broadcast with previously seen size {}",
                            label(s), size, i, label_size[s]
                        )));
                    }
                    label_size[s] = size;
                    dim_counts[plan.perm_index[s] as usize] += 1;
                }
                permutation[plan.perm_index[s] as usize] = dim as i64;
                dim += 1;
            } else {
                // a repeated label: its diagonal, moved back to where the label first appeared
                let prev = permutation[plan.perm_index[s] as usize] as usize;
                if op.shape()[dim] != op.shape()[prev] {
                    return Err(err(format!(
                        "einsum(): subscript {} is repeated for operand {} but the sizes don't match, {} != {}",
                        label(s), i, op.shape()[dim], op.shape()[prev]
                    )));
                }
                op = views::diagonal(&op, 0, prev as i64, dim as i64)?;
                op = movedim_last_to(&op, prev)?;
            }
        }
        for p in permutation.iter_mut() {
            if *p == -1 {
                op = views::unsqueeze(&op, dim as i64)?;
                *p = dim as i64;
                dim += 1;
            }
        }
        ops.push_back(views::permute(&op, &permutation)?);
    }
    Ok((ops, dim_counts))
}

/// `t.movedim(-1, to)`: a permute.
fn movedim_last_to(t: &Tensor, to: usize) -> Result<Tensor> {
    let n = t.ndim();
    let mut order: Vec<usize> = (0..n - 1).collect();
    order.insert(to, n - 1);
    views::permute(t, &as_i64(&order))
}

/// `(left * right).sum(sum_dims, keepdim=True)` as one `bmm` (torch's sumproduct_pair): both
/// have the same rank; a dim of size 1 in one of them broadcasts.
fn sumproduct_pair(left: &Tensor, right: &Tensor, sum_dims: &[usize]) -> Result<Tensor> {
    if sum_dims.is_empty() {
        return fm::mul(left, right);
    }
    let (mut left, mut right) = (left.clone(), right.clone());
    let dims = left.ndim();
    let (mut lro, mut lo, mut ro) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lro_size, mut lo_size, mut ro_size, mut sum_size) = (1usize, 1usize, 1usize, 1usize);
    let mismatch = || err("non-broadcast dimensions must match".into());
    for i in 0..dims {
        let (sl, sr) = (left.shape()[i] != 1, right.shape()[i] != 1);
        if sum_dims.contains(&i) {
            if sl && sr {
                if left.shape()[i] != right.shape()[i] {
                    return Err(mismatch());
                }
                sum_size *= left.shape()[i];
            } else if sl {
                left = sum(&left, Some(&[i as i64]), true, None)?;
            } else if sr {
                right = sum(&right, Some(&[i as i64]), true, None)?;
            }
        } else if sl && sr {
            if left.shape()[i] != right.shape()[i] {
                return Err(mismatch());
            }
            lro.push(i);
            lro_size *= left.shape()[i];
        } else if sl {
            lo.push(i);
            lo_size *= left.shape()[i];
        } else {
            ro.push(i);
            ro_size *= right.shape()[i];
        }
    }
    let mut out_size: Vec<i64> = Vec::with_capacity(dims);
    out_size.extend(lro.iter().map(|&d| left.shape()[d] as i64));
    out_size.extend(lo.iter().map(|&d| left.shape()[d] as i64));
    out_size.extend(sum_dims.iter().map(|_| 1));
    out_size.extend(ro.iter().map(|&d| right.shape()[d] as i64));
    let lperm: Vec<usize> = [&lro[..], &lo, sum_dims, &ro].concat();
    let rperm: Vec<usize> = [&lro[..], sum_dims, &ro, &lo].concat();
    let mut operm = vec![0i64; dims];
    for (i, &d) in lperm.iter().enumerate() {
        operm[d] = i as i64;
    }
    let l = views::reshape(&views::permute(&left, &as_i64(&lperm))?, &[lro_size as i64, lo_size as i64, sum_size as i64])?;
    let r = views::reshape(&views::permute(&right, &as_i64(&rperm))?, &[lro_size as i64, sum_size as i64, ro_size as i64])?;
    views::permute(&views::view(&bmm(&l, &r)?, &out_size)?, &operm)
}

/// Differentiable `einsum(equation, operands)`.
pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    if operands.is_empty() {
        return Err(err("einsum(): must provide at least one operand".into()));
    }
    let eq = equation.as_bytes();
    let arrow = equation.find("->");
    let labels = parse_inputs(&eq[..arrow.unwrap_or(eq.len())], operands.len())?;
    let plan = plan(eq, arrow, &labels, operands)?;
    let (mut ops, mut dim_counts) = align(&plan, &labels, operands)?;
    while ops.len() > 1 {
        let (mut a, mut b) = (ops.pop_front().expect("two operands"), ops.pop_front().expect("two operands"));
        let (mut sum_dims, mut a_sum, mut b_sum) = (Vec::new(), Vec::new(), Vec::new());
        for d in plan.out_dims..plan.all_dims {
            if a.shape()[d] != 1 && b.shape()[d] != 1 {
                dim_counts[d] -= 1;
                if dim_counts[d] == 1 {
                    sum_dims.push(d);
                    dim_counts[d] = 0;
                }
            } else if dim_counts[d] == 1 {
                if a.shape()[d] != 1 {
                    a_sum.push(d as i64);
                    dim_counts[d] = 0;
                } else if b.shape()[d] != 1 {
                    b_sum.push(d as i64);
                    dim_counts[d] = 0;
                }
            }
        }
        if !a_sum.is_empty() {
            a = sum(&a, Some(&a_sum), true, None)?;
        }
        if !b_sum.is_empty() {
            b = sum(&b, Some(&b_sum), true, None)?;
        }
        ops.push_front(sumproduct_pair(&a, &b, &sum_dims)?);
    }
    let result = ops.pop_front().expect("one operand left");
    if plan.all_dims == plan.out_dims {
        return Ok(result);
    }
    if operands.len() > 1 {
        let sizes: Vec<i64> = result.shape()[..plan.out_dims].iter().map(|&s| s as i64).collect();
        views::view(&result, &sizes)
    } else {
        let dims: Vec<i64> = (plan.out_dims as i64..plan.all_dims as i64).collect();
        sum(&result, Some(&dims), false, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn f(v: &[f64], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    #[test]
    fn contractions() {
        let a = f(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
        let b = f(&[1., 0., -1., 2., 0.5, 1.], &[3, 2]);
        assert_eq!(einsum("ij,jk->ik", &[a.clone(), b.clone()]).unwrap().to_vec::<f64>().unwrap(), vec![0.5, 7., 2., 16.]);
        assert_eq!(einsum("ij->ji", &[a.clone()]).unwrap().to_vec::<f64>().unwrap(), vec![1., 4., 2., 5., 3., 6.]);
        assert_eq!(einsum("ij->", &[a.clone()]).unwrap().to_vec::<f64>().unwrap(), vec![21.]);
        assert_eq!(einsum("ii", &[f(&[1., 2., 3., 4.], &[2, 2])]).unwrap().to_vec::<f64>().unwrap(), vec![5.]);
        assert_eq!(einsum("i,j", &[f(&[1., 2.], &[2]), f(&[3., 4.], &[2])]).unwrap().to_vec::<f64>().unwrap(), vec![3., 4., 6., 8.]);
        assert_eq!(einsum("...j,j", &[a.clone(), f(&[1., 1., 1.], &[3])]).unwrap().to_vec::<f64>().unwrap(), vec![6., 15.]);
        assert_eq!(
            einsum("ij->k", &[a.clone()]).unwrap_err().to_string(),
            "einsum(): output subscript k does not appear in the equation for any input operand"
        );
    }

    #[test]
    fn einsum_passes_gradcheck() {
        let (a, b, c) = (rand_leaf(&[2, 3], 31), rand_leaf(&[3, 4], 32), rand_leaf(&[4], 33));
        gradcheck("matmul", &|t| einsum("ij,jk->ik", &[t[0].clone(), t[1].clone()]), &[a.clone(), b.clone()], true);
        gradcheck("three", &|t| einsum("ij,jk,k->i", &[t[0].clone(), t[1].clone(), t[2].clone()]), &[a.clone(), b.clone(), c.clone()], true);
        let sq = rand_leaf(&[3, 3], 34);
        gradcheck("trace", &|t| einsum("ii->", &[t[0].clone()]), &[sq], true);
        assert_eq!(node_name(&einsum("ij,jk->ik", &[a.clone(), b.clone()]).unwrap()), "ViewBackward0");
    }
}
