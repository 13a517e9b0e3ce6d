//! The unstable sorting algorithms of GNU libstdc++ (`std::sort`, `std::nth_element`, the heap
//! functions), step for step.
//!
//! Why: torch's CPU `sort(stable=False)` and `topk` call these on (value, index) pairs with a
//! comparator that looks at the value only, so which of several equal values comes first, and
//! so which index is returned for a tie, is decided by the exact sequence of comparisons and
//! moves of the library torch's Linux build links against. Reproducing that sequence is the only
//! way to return torch's indices for ties. Each function mirrors the libstdc++ routine of the
//! same name (`__introsort_loop`, `__unguarded_partition_pivot`, `__adjust_heap`, ...); the
//! comparator `less(a, b)` is the strict weak order torch passes.

/// `std::__lg`: floor(log2(n)) for n > 0.
fn lg(n: usize) -> usize {
    (usize::BITS - 1 - n.leading_zeros()) as usize
}

const THRESHOLD: usize = 16; // libstdc++'s _S_threshold

/// `std::sort(v.begin(), v.end(), less)`.
pub fn sort<P: Copy>(v: &mut [P], less: &impl Fn(&P, &P) -> bool) {
    if v.len() > 1 {
        introsort_loop(v, 0, v.len(), 2 * lg(v.len()), less);
        final_insertion_sort(v, 0, v.len(), less);
    }
}

/// `std::partial_sort(v.begin(), v.begin() + middle, v.end(), less)`: the `middle` first
/// elements under `less`, sorted, at the front (a heap selection, then a heap sort).
pub fn partial_sort<P: Copy>(v: &mut [P], middle: usize, less: &impl Fn(&P, &P) -> bool) {
    heap_select(v, 0, middle, v.len(), less);
    sort_heap(v, 0, middle, less);
}

/// `std::nth_element(v.begin(), v.begin() + nth, v.end(), less)`.
pub fn nth_element<P: Copy>(v: &mut [P], nth: usize, less: &impl Fn(&P, &P) -> bool) {
    if v.is_empty() || nth == v.len() {
        return;
    }
    let (mut first, mut last) = (0, v.len());
    let mut depth = 2 * lg(v.len());
    while last - first > 3 {
        if depth == 0 {
            heap_select(v, first, nth + 1, last, less);
            v.swap(first, nth);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(v, first, last, less);
        if cut <= nth {
            first = cut;
        } else {
            last = cut;
        }
    }
    insertion_sort(v, first, last, less);
}

fn introsort_loop<P: Copy>(v: &mut [P], first: usize, mut last: usize, mut depth: usize, less: &impl Fn(&P, &P) -> bool) {
    while last - first > THRESHOLD {
        if depth == 0 {
            // std::__partial_sort(first, last, last): heap_select then sort_heap
            heap_select(v, first, last, last, less);
            sort_heap(v, first, last, less);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(v, first, last, less);
        introsort_loop(v, cut, last, depth, less);
        last = cut;
    }
}

fn unguarded_partition_pivot<P: Copy>(v: &mut [P], first: usize, last: usize, less: &impl Fn(&P, &P) -> bool) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(v, first, first + 1, mid, last - 1, less);
    unguarded_partition(v, first + 1, last, first, less)
}

fn move_median_to_first<P: Copy>(v: &mut [P], result: usize, a: usize, b: usize, c: usize, less: &impl Fn(&P, &P) -> bool) {
    let pick = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(result, pick);
}

fn unguarded_partition<P: Copy>(v: &mut [P], mut first: usize, mut last: usize, pivot: usize, less: &impl Fn(&P, &P) -> bool) -> usize {
    loop {
        while less(&v[first], &v[pivot]) {
            first += 1;
        }
        last -= 1;
        while less(&v[pivot], &v[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

fn insertion_sort<P: Copy>(v: &mut [P], first: usize, last: usize, less: &impl Fn(&P, &P) -> bool) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if less(&v[i], &v[first]) {
            let val = v[i];
            v.copy_within(first..i, first + 1);
            v[first] = val;
        } else {
            unguarded_linear_insert(v, i, less);
        }
    }
}

fn unguarded_linear_insert<P: Copy>(v: &mut [P], mut last: usize, less: &impl Fn(&P, &P) -> bool) {
    let val = v[last];
    let mut next = last - 1;
    while less(&val, &v[next]) {
        v[last] = v[next];
        last = next;
        next -= 1;
    }
    v[last] = val;
}

fn final_insertion_sort<P: Copy>(v: &mut [P], first: usize, last: usize, less: &impl Fn(&P, &P) -> bool) {
    if last - first > THRESHOLD {
        insertion_sort(v, first, first + THRESHOLD, less);
        for i in first + THRESHOLD..last {
            unguarded_linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, first, last, less);
    }
}

// ----- heaps (a max-heap under `less`, rooted at `first`) -----

/// `std::__push_heap`: moves `value` up from `hole` towards `top`.
fn push_heap_hole<P: Copy>(v: &mut [P], first: usize, mut hole: usize, top: usize, value: P, less: &impl Fn(&P, &P) -> bool) {
    let mut parent = hole.wrapping_sub(1) / 2;
    while hole > top && less(&v[first + parent], &value) {
        v[first + hole] = v[first + parent];
        hole = parent;
        parent = hole.wrapping_sub(1) / 2;
    }
    v[first + hole] = value;
}

/// `std::__adjust_heap`: sifts the hole at `hole` down to a leaf, then pushes `value` up.
fn adjust_heap<P: Copy>(v: &mut [P], first: usize, mut hole: usize, len: usize, value: P, less: &impl Fn(&P, &P) -> bool) {
    let top = hole;
    let mut child = hole;
    while len >= 1 && child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(&v[first + child], &v[first + child - 1]) {
            child -= 1;
        }
        v[first + hole] = v[first + child];
        hole = child;
    }
    if len & 1 == 0 && len >= 2 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[first + hole] = v[first + child - 1];
        hole = child - 1;
    }
    push_heap_hole(v, first, hole, top, value, less);
}

/// `std::make_heap(first, last)`.
fn make_heap<P: Copy>(v: &mut [P], first: usize, last: usize, less: &impl Fn(&P, &P) -> bool) {
    let len = last - first;
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let value = v[first + parent];
        adjust_heap(v, first, parent, len, value, less);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

/// `std::__pop_heap(first, last, result)`: the top goes to `result`, `result`'s old value is
/// re-inserted into the heap `[first, last)`.
fn pop_heap_into<P: Copy>(v: &mut [P], first: usize, last: usize, result: usize, less: &impl Fn(&P, &P) -> bool) {
    let value = v[result];
    v[result] = v[first];
    adjust_heap(v, first, 0, last - first, value, less);
}

/// `std::sort_heap(first, last)`.
fn sort_heap<P: Copy>(v: &mut [P], first: usize, mut last: usize, less: &impl Fn(&P, &P) -> bool) {
    while last - first > 1 {
        last -= 1;
        pop_heap_into(v, first, last, last, less);
    }
}

/// `std::__heap_select(first, middle, last)`: the `middle - first` first elements under
/// `less` end up in the heap `[first, middle)`.
fn heap_select<P: Copy>(v: &mut [P], first: usize, middle: usize, last: usize, less: &impl Fn(&P, &P) -> bool) {
    make_heap(v, first, middle, less);
    for i in middle..last {
        if less(&v[i], &v[first]) {
            pop_heap_into(v, first, middle, i, less);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_value(a: &(i32, usize), b: &(i32, usize)) -> bool {
        a.0 < b.0
    }

    fn pseudo_random(n: usize, seed: u64, modulo: i32) -> Vec<(i32, usize)> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (((s >> 33) % modulo as u64) as i32, i)
            })
            .collect()
    }

    #[test]
    fn sort_orders_values_and_keeps_every_pair() {
        for n in [0, 1, 2, 5, 16, 17, 40, 300] {
            let v0 = pseudo_random(n, n as u64 + 1, 7);
            let mut v = v0.clone();
            sort(&mut v, &by_value);
            assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
            let mut seen: Vec<usize> = v.iter().map(|p| p.1).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn short_ranges_are_insertion_sorted_so_ties_keep_their_order() {
        let mut v = vec![(2, 0), (1, 1), (2, 2), (1, 3), (2, 4)];
        sort(&mut v, &by_value);
        assert_eq!(v, vec![(1, 1), (1, 3), (2, 0), (2, 2), (2, 4)]);
    }

    #[test]
    fn nth_element_partitions_around_nth() {
        for n in [1, 3, 4, 9, 50, 200] {
            for nth in [0, n / 2, n - 1] {
                let mut v = pseudo_random(n, 7 + n as u64, 5);
                nth_element(&mut v, nth, &by_value);
                assert!(v[..nth].iter().all(|p| p.0 <= v[nth].0));
                assert!(v[nth + 1..].iter().all(|p| p.0 >= v[nth].0));
            }
        }
    }

    #[test]
    fn partial_sort_puts_the_smallest_first_in_order() {
        for n in [1, 2, 9, 64, 130] {
            for middle in [0, 1, n / 3, n] {
                let mut v = pseudo_random(n, 5 + n as u64, 9);
                let mut all: Vec<i32> = v.iter().map(|p| p.0).collect();
                all.sort_unstable();
                partial_sort(&mut v, middle, &by_value);
                assert_eq!(v[..middle].iter().map(|p| p.0).collect::<Vec<_>>(), all[..middle].to_vec());
            }
        }
    }
}
