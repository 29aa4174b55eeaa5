-- Robust aggregates: SMed median, Scale IQR, A_samp mode (design/ptr-and-asamp.md).
SELECT MEDIAN(age), IQR(income), MODE(dept) FROM people;
