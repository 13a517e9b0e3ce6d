//! `x[key]`: a view for basic keys (recorded as one view node named after the last step),
//! a copy through `advanced::index` for advanced ones (IndexBackward0).

use crate::error::Result;
use crate::ops::advanced;
use crate::ops::views;
use crate::tensor::Tensor;
use super::{basic_view, view_or_self, Indexed, Key, Step, TensorIndex};
use super::walk::{apply_slicing, bool_index, precheck_key, select_x, slice, trim};

/// `x[key]`.
pub fn get_item_raw(x: &Tensor, key: &Key) -> Result<Indexed> {
    match key {
        Key::Single(TensorIndex::Int(i)) => Ok(Indexed::View(x.view_as_layout(select_x(x, *i)?))),
        Key::Single(TensorIndex::Slice { start, stop, step }) => {
            Ok(Indexed::View(x.view_as_layout(slice(&x.layout, 0, *start, *stop, *step)?)))
        }
        Key::Single(TensorIndex::None) => Ok(Indexed::View(x.view_as_layout(x.layout.unsqueeze(0)?))),
        Key::Single(TensorIndex::Ellipsis) => Ok(Indexed::View(x.view_as_layout(x.layout.clone()))),
        Key::Single(TensorIndex::Bool(b)) => {
            let v = x.view_as_layout(x.layout.unsqueeze(0)?);
            Ok(Indexed::Copy(advanced::index_raw(&v, &[Some(bool_index(*b)?)])?))
        }
        Key::Single(item) => get_item_raw(x, &Key::Tuple(vec![item.clone()])),
        Key::Tuple(items) => {
            let (layout, indices, _) = apply_slicing(x, items)?;
            let sliced = x.view_as_layout(layout);
            if indices.is_empty() {
                return Ok(Indexed::View(sliced));
            }
            Ok(Indexed::Copy(advanced::index_raw(&sliced, trim(&indices))?))
        }
    }
}

/// Differentiable `x[key]`: basic keys give a recorded view (SelectBackward0, SliceBackward0,
/// UnsqueezeBackward0 for the last step; AliasBackward0 for `...` and keys that change
/// nothing); advanced keys give IndexBackward0 on the basic view before them.
pub fn get_item(x: &Tensor, key: &Key) -> Result<Indexed> {
    precheck_key(x, key, false)?;
    match key {
        Key::Single(TensorIndex::Int(i)) => {
            let l = select_x(x, *i)?;
            Ok(Indexed::View(basic_view(x, l, vec![Step::Select(0, *i)])?))
        }
        Key::Single(TensorIndex::Slice { start, stop, step }) => {
            // A lone slice is always a slice (torch disables the full-slice shortcut here).
            let l = slice(&x.layout, 0, *start, *stop, *step)?;
            Ok(Indexed::View(basic_view(x, l, vec![Step::Slice(0, *start, *stop, *step)])?))
        }
        Key::Single(TensorIndex::None) => Ok(Indexed::View(basic_view(x, x.layout.unsqueeze(0)?, vec![Step::Unsqueeze(0)])?)),
        Key::Single(TensorIndex::Ellipsis) => Ok(Indexed::View(views::alias(x)?)),
        Key::Single(TensorIndex::Bool(b)) => {
            let v = basic_view(x, x.layout.unsqueeze(0)?, vec![Step::Unsqueeze(0)])?;
            Ok(Indexed::Copy(advanced::index(&v, &[Some(bool_index(*b)?)])?))
        }
        Key::Single(item) => get_item(x, &Key::Tuple(vec![item.clone()])),
        Key::Tuple(items) => {
            let (layout, indices, steps) = apply_slicing(x, items)?;
            if indices.is_empty() {
                if steps.is_empty() {
                    return Ok(Indexed::View(views::alias(x)?));
                }
                return Ok(Indexed::View(basic_view(x, layout, steps)?));
            }
            let sliced = view_or_self(x, layout, steps)?;
            Ok(Indexed::Copy(advanced::index(&sliced, trim(&indices))?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{DType, Scalar};
    use crate::error::Error;
    use crate::ops::index::test_util::arange;

    fn view(r: Indexed) -> Tensor {
        match r {
            Indexed::View(t) => t,
            Indexed::Copy(_) => panic!("expected a view"),
        }
    }

    #[test]
    fn basic_keys_are_views_with_torch_layouts() {
        let x = arange(12, &[3, 4]);
        let r = view(get_item_raw(&x, &Key::Single(TensorIndex::Int(-1))).unwrap());
        assert_eq!((r.shape().to_vec(), r.layout.offset), (vec![4], 8));
        let key = Key::Tuple(vec![
            TensorIndex::Slice { start: 1, stop: i64::MAX, step: 2 },
            TensorIndex::None,
            TensorIndex::Ellipsis,
            TensorIndex::Int(0),
        ]);
        let r = view(get_item_raw(&x, &key).unwrap());
        assert_eq!((r.shape().to_vec(), r.strides().to_vec(), r.layout.offset), (vec![1, 1], vec![8, 4], 4));
        assert!(r.version.shares_with(&x.version));
    }

    #[test]
    fn errors_match_torch() {
        let x = arange(12, &[3, 4]);
        let e = get_item_raw(&x, &Key::Tuple(vec![TensorIndex::Int(0), TensorIndex::Int(5)])).unwrap_err();
        assert_eq!(e, Error::Index("index 5 is out of bounds for dimension 1 with size 4".into()));
        let e = get_item_raw(&x, &Key::Tuple(vec![TensorIndex::Int(0); 3])).unwrap_err();
        assert_eq!(e.to_string(), "too many indices for tensor of dimension 2");
        let e = get_item_raw(&x, &Key::Single(TensorIndex::Slice { start: 0, stop: 3, step: -1 })).unwrap_err();
        assert_eq!(e, Error::Value("step must be greater than zero".into()));
        // Repeated `...` walk past the rank; torch then misreads a stride as the size.
        let y = arange(24, &[2, 3, 4]);
        let key = |i| Key::Tuple(vec![TensorIndex::Ellipsis, TensorIndex::Ellipsis, TensorIndex::Ellipsis, TensorIndex::Int(i)]);
        assert_eq!(get_item_raw(&y, &key(5)).unwrap_err().to_string(), "index 5 is out of bounds for dimension 3 with size 4");
        assert_eq!(
            get_item_raw(&y, &key(0)).unwrap_err().to_string(),
            "Dimension out of range (expected to be in range of [-3, 2], but got 6)"
        );
        let s = Tensor::scalar(Scalar::Float(1.0), DType::Float32).unwrap();
        let e = get_item_raw(&s, &Key::Single(TensorIndex::Int(1))).unwrap_err();
        assert_eq!(e.to_string(), "index 1 is out of bounds for dimension 0 with size 0");
    }
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::index::test_util::sl;
    use crate::ops::reduce::testing::*;

    fn get(x: &Tensor, key: Key) -> Tensor {
        match get_item(x, &key).unwrap() {
            Indexed::View(t) | Indexed::Copy(t) => t,
        }
    }

    #[test]
    fn view_keys_name_their_last_step() {
        let x = leaf((0..12).map(f64::from).collect(), &[3, 4]);
        let cases: Vec<(Key, &str)> = vec![
            (Key::Single(sl(0, i64::MAX)), "SliceBackward0"),
            (Key::Single(TensorIndex::Int(0)), "SelectBackward0"),
            (Key::Tuple(vec![TensorIndex::Int(0), sl(1, 3)]), "SliceBackward0"),
            (Key::Tuple(vec![TensorIndex::Ellipsis, TensorIndex::Int(0)]), "SelectBackward0"),
            (Key::Tuple(vec![TensorIndex::None, TensorIndex::Int(0)]), "SelectBackward0"),
            (Key::Single(TensorIndex::Ellipsis), "AliasBackward0"),
            (Key::Tuple(vec![sl(0, i64::MAX), sl(0, 4)]), "AliasBackward0"),
            (Key::Tuple(vec![sl(0, 10), TensorIndex::Int(1)]), "SelectBackward0"),
            (Key::Tuple(vec![sl(1, i64::MAX), TensorIndex::Tensor(Tensor::from_vec(vec![0i64, 1], &[2]).unwrap())]), "IndexBackward0"),
        ];
        for (key, name) in cases {
            assert_eq!(node_name(&get(&x, key.clone())), name, "{:?}", key);
        }
    }

    #[test]
    fn gradients_reach_x_through_views_and_indices() {
        let x = leaf((0..12).map(f64::from).collect(), &[3, 4]);
        // x[1:, [0, 3]]: a slice, then an index on it.
        let key = Key::Tuple(vec![sl(1, i64::MAX), TensorIndex::Tensor(Tensor::from_vec(vec![0i64, 3], &[2]).unwrap())]);
        let out = get(&x, key);
        backward(&out, Some(vals(vec![1., 2., 3., 4.], &[2, 2])));
        assert_eq!(grad(&x), vec![0., 0., 0., 0., 1., 0., 0., 2., 3., 0., 0., 4.]);
        // x[None, 2][..., 1:3]
        let x = leaf((0..12).map(f64::from).collect(), &[3, 4]);
        let v = get(&x, Key::Tuple(vec![TensorIndex::None, TensorIndex::Int(2), sl(1, 3)]));
        assert_eq!(v.shape(), &[1, 2]);
        backward(&v, Some(vals(vec![5., 6.], &[1, 2])));
        assert_eq!(grad(&x), vec![0., 0., 0., 0., 0., 0., 0., 0., 0., 5., 6., 0.]);
    }

    #[test]
    fn get_keys_pass_gradcheck() {
        let idx = || TensorIndex::Tensor(Tensor::from_vec(vec![2i64, 0], &[2]).unwrap());
        let gets: Vec<Key> = vec![
            Key::Single(TensorIndex::Int(-1)),
            Key::Single(sl(1, i64::MAX)),
            Key::Tuple(vec![TensorIndex::Ellipsis, TensorIndex::None, sl(0, 2)]),
            Key::Tuple(vec![TensorIndex::Slice { start: 0, stop: 3, step: 2 }, idx()]),
            Key::Tuple(vec![idx(), TensorIndex::Int(1)]),
            Key::Single(TensorIndex::Bool(true)),
        ];
        for key in gets {
            let k = key.clone();
            gradcheck(&format!("get {:?}", key), &move |t| Ok(get(&t[0], k.clone())), &[rand_leaf(&[3, 4], 1)], true);
        }
    }
}
