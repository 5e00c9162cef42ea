from django.urls import path

from audit import api

urlpatterns = [
    path("v1/records", api.RecordsApi.as_view(), name="api-records"),
    path("v1/records/export", api.RecordsExportApi.as_view(), name="api-records-export"),
    path(
        "v1/records/dead-letters",
        api.RecordDeadLettersApi.as_view(),
        name="api-records-dead-letters",
    ),
    path(
        "v1/governance-events/export",
        api.GovernanceEventsExportApi.as_view(),
        name="api-governance-events-export",
    ),
    path(
        "v1/records/export/<uuid:export_id>/manifest",
        api.RecordsExportManifestApi.as_view(),
        name="api-records-export-manifest",
    ),
]
