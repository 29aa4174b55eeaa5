-- expect: DP102
COPY people TO 'people.csv'
