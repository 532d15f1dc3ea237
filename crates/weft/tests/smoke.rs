use weft::{ops, Array, Dtype};

#[test]
fn elementwise_and_views() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let t = ops::transpose(&a, &[]).unwrap();
    let b = (&t + &ops::full(&[3, 1], 10.0f32).unwrap()).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![11.0, 14.0, 12.0, 15.0, 13.0, 16.0]);
    let c = ops::concatenate(&[a.clone(), a.clone()], 1).unwrap();
    assert_eq!(c.shape(), &[2, 6]);
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![1., 2., 3., 1., 2., 3., 4., 5., 6., 4., 5., 6.]);
    let s = ops::slice(&a, &[ops::SliceArg::ALL, ops::SliceArg::new(None, None, -2)]).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.0, 1.0, 6.0, 4.0]);
    let e = ops::eye(3, 3, 0, Dtype::I32).unwrap();
    assert_eq!(e.to_vec::<i32>().unwrap(), vec![1, 0, 0, 0, 1, 0, 0, 0, 1]);
}
