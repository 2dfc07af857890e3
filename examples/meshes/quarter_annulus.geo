// The quarter annulus 1 <= r <= 2 of the first quadrant: one transfinite block of 8 x 8
// quadrilaterals of order 2. gmsh -2 -order 2 -format msh41 quarter_annulus.geo
Point(1) = {0, 0, 0};
Point(2) = {1, 0, 0};
Point(3) = {2, 0, 0};
Point(4) = {0, 2, 0};
Point(5) = {0, 1, 0};
Line(1) = {2, 3};
Circle(2) = {3, 1, 4};
Line(3) = {4, 5};
Circle(4) = {5, 1, 2};
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Transfinite Curve {1, 2, 3, 4} = 9;
Transfinite Surface {1};
Recombine Surface {1};
Physical Curve("bottom") = {1};
Physical Curve("outer") = {2};
Physical Curve("left") = {3};
Physical Curve("inner") = {4};
Physical Surface("domain") = {1};
Mesh.SecondOrderIncomplete = 0;
