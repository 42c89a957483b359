"""The preflight (`kmigrate clusters check`): before anything moves, whether each
configured cluster answers, accepts kmigrate's credentials, which Kafka and metadata mode
it runs, and whether kmigrate's principal may do what each role needs (``needs``, pure;
``check`` asks the cluster)."""
