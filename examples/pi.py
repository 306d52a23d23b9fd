"""Monte-Carlo estimate of Pi with PySpark: the smallest real Spark application.

Usage: pi.py [partitions]   (100,000 samples per partition)
"""
import random
import sys
from operator import add

from pyspark.sql import SparkSession


def inside(_: int) -> int:
    x, y = random.random() * 2 - 1, random.random() * 2 - 1
    return 1 if x * x + y * y <= 1 else 0


def main() -> None:
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    samples = 100_000 * partitions
    spark = SparkSession.builder.appName("pi").getOrCreate()
    hits = spark.sparkContext.parallelize(range(samples), partitions).map(inside).reduce(add)
    print(f"Pi is roughly {4.0 * hits / samples}")
    spark.stop()


if __name__ == "__main__":
    main()
