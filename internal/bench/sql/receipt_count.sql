SELECT count(*) FROM bench.receipts
