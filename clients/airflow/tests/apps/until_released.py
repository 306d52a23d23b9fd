"""A Spark application that runs until a file exists, then ends COMPLETED: a test holds it RUNNING
for as long as it needs (a kill, a retry) without guessing how long that takes.

  spark-submit until_released.py RELEASE_FILE
"""
import os
import sys
import time

from pyspark.sql import SparkSession

release = sys.argv[1]
spark = SparkSession.builder.appName("until-released").getOrCreate()
counted = spark.sparkContext.parallelize(range(1000), 2).count()
print("Counted %d rows; running until %s exists" % (counted, release), flush=True)
while not os.path.exists(release):
    time.sleep(0.2)
print("Released after counting %d rows" % counted, flush=True)
spark.stop()
