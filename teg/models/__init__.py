"""teg.models"""
